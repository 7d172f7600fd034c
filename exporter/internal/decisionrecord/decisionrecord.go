// Package decisionrecord reads recovery decisions out of the log records the
// triage connector emits, and walks a batch of them so that a delivery
// exporter retries only what was not delivered yet.
//
// It treats the decision document as opaque JSON: the exporters only need the
// idempotency key and two routing fields, which the connector flattens into
// the record's attributes (package wire), so they do not depend on the
// recovery package's Go types and parse the document only to check it (or,
// for a record from another producer, to read a routing field it lacks).
package decisionrecord // import "github.com/triage-otel/triage/exporter/internal/decisionrecord"

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/triage-otel/triage/wire"
)

// Attribute keys the connector sets on each decision log record.
const (
	AttrDecisionID  = wire.AttrDecisionID
	AttrFailureType = wire.AttrFailureType
	AttrActionKind  = wire.AttrActionKind
)

// ErrInvalidBody is returned for a record whose body is not a JSON object.
// Such a record can never be delivered, so exporters drop it as permanent.
var ErrInvalidBody = errors.New("log record body is not a decision JSON object")

// Decision is one decision ready to deliver.
type Decision struct {
	// ID is the idempotency key: the record's triage.decision.id attribute,
	// else the document's decision_id, else a hash of the document so that
	// retries of the same document still carry the same key.
	ID string
	// JSON is the decision document as sent on the wire. A string body is
	// passed through byte for byte; a map body is marshalled.
	JSON        []byte
	FailureType string
	ActionKind  string
}

// FromLogRecord extracts a Decision. It never panics on malformed input; it
// returns an error wrapping ErrInvalidBody instead.
func FromLogRecord(lr plog.LogRecord) (Decision, error) {
	body, err := bodyText(lr.Body())
	if err != nil {
		return Decision{}, err
	}
	// Routing fields from the attributes (else the document), and the
	// document checked as JSON: one scan of it at most.
	wd, ok := wire.ReadDecision(lr.Attributes(), body, nil, wire.ReadOptions{Validate: true})
	if !ok {
		return Decision{}, ErrInvalidBody
	}
	raw := []byte(strings.TrimSpace(body))
	if !utf8.Valid(raw) {
		// JSON must be UTF-8 on the wire; a stray byte (e.g. a truncated tool
		// output quoted in the evidence) is not a reason to lose the decision.
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	d := Decision{JSON: raw, ID: wd.ID, FailureType: wd.FailureType, ActionKind: wd.ActionKind}
	if d.ID == "" {
		sum := sha256.Sum256(raw)
		d.ID = "sha256-" + hex.EncodeToString(sum[:16])
	}
	return d, nil
}

// bodyText returns the record's body as the document text: a string or
// bytes body as it is, a map body marshalled.
func bodyText(body pcommon.Value) (string, error) {
	switch body.Type() {
	case pcommon.ValueTypeStr:
		return body.Str(), nil
	case pcommon.ValueTypeBytes:
		return string(body.Bytes().AsRaw()), nil
	case pcommon.ValueTypeMap:
		b, err := json.Marshal(body.Map().AsRaw())
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalidBody, err)
		}
		return string(b), nil
	default:
		return "", fmt.Errorf("%w: body type %s", ErrInvalidBody, body.Type())
	}
}

// Deliver sends every decision in ld, in order.
//
// send returns nil when the decision was delivered, a consumererror permanent
// error when it can never be delivered, or any other error when it may be
// retried. A record that is not a decision, or whose send fails permanently, is
// reported to onDrop and skipped. At the first retryable failure Deliver stops
// and returns consumererror.NewLogs(err, rest), where rest holds the failing
// record and every record after it: exporterhelper's retry sender then resends
// only those, so a decision already delivered is not sent again by the retry.
//
// When every record was dropped, Deliver returns a permanent error so that the
// exporterhelper's own failure counters see the batch; otherwise it returns nil.
func Deliver(ld plog.Logs, send func(Decision) error, onDrop func(d Decision, err error)) error {
	total, dropped := 0, 0
	var dropErrs []error
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				total++
				d, err := FromLogRecord(lrs.At(k))
				if err == nil {
					err = send(d)
					if err != nil && !consumererror.IsPermanent(err) {
						return consumererror.NewLogs(err, remainder(ld, i, j, k))
					}
				} else {
					err = consumererror.NewPermanent(err)
				}
				if err != nil {
					dropped++
					if len(dropErrs) < 3 {
						dropErrs = append(dropErrs, err)
					}
					onDrop(d, err)
				}
			}
		}
	}
	if total > 0 && dropped == total {
		return consumererror.NewPermanent(fmt.Errorf("all %d decisions dropped: %w", total, errors.Join(dropErrs...)))
	}
	return nil
}

// remainder copies the records of ld from position (i, j, k) on, keeping
// their resource and scope.
func remainder(ld plog.Logs, ri, si, li int) plog.Logs {
	out := plog.NewLogs()
	rls := ld.ResourceLogs()
	for i := ri; i < rls.Len(); i++ {
		rl := rls.At(i)
		outRL := out.ResourceLogs().AppendEmpty()
		rl.Resource().CopyTo(outRL.Resource())
		outRL.SetSchemaUrl(rl.SchemaUrl())
		sls := rl.ScopeLogs()
		firstScope := 0
		if i == ri {
			firstScope = si
		}
		for j := firstScope; j < sls.Len(); j++ {
			sl := sls.At(j)
			outSL := outRL.ScopeLogs().AppendEmpty()
			sl.Scope().CopyTo(outSL.Scope())
			outSL.SetSchemaUrl(sl.SchemaUrl())
			lrs := sl.LogRecords()
			firstRecord := 0
			if i == ri && j == si {
				firstRecord = li
			}
			for k := firstRecord; k < lrs.Len(); k++ {
				lrs.At(k).CopyTo(outSL.LogRecords().AppendEmpty())
			}
		}
	}
	return out
}
