package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
	"github.com/triage-otel/triage/wire"
)

// decisionEventName is the event name of every decision log record.
const decisionEventName = wire.EventDecision

// logsConnector emits one log record per recovery decision.
type logsConnector struct {
	logger *zap.Logger
	tb     *metadata.TelemetryBuilder
	seen   *seenRuns
	sender *decisionSender
	now    func() time.Time
}

var _ connector.Traces = (*logsConnector)(nil)

func newLogsConnector(set connector.Settings, cfg *Config, next consumer.Logs) (*logsConnector, error) {
	if next == nil {
		return nil, errors.New("nil next consumer")
	}
	seen, err := newSeenRuns(cfg.DecisionDedupCacheSize)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	c := &logsConnector{logger: set.Logger, tb: tb, seen: seen, now: time.Now,
		sender: newDecisionSender(cfg.DecisionRetry, next, tb, set.Logger, seen)}
	return c, nil
}

// Start starts the retry of refused decisions.
func (c *logsConnector) Start(context.Context, component.Host) error {
	c.sender.start()
	return nil
}

// Shutdown offers the decisions still queued for retry a last time.
func (c *logsConnector) Shutdown(ctx context.Context) error {
	c.sender.shutdown(ctx)
	c.tb.Shutdown()
	return nil
}

func (*logsConnector) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeTraces emits the decisions stamped on the batch's run roots. It
// never returns the logs pipeline's refusal to the traces pipeline (see
// decisionSender): a refused batch is retried from here.
func (c *logsConnector) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	rep := reporter{}
	out := plog.NewLogs()
	observed := pcommon.NewTimestampFromTime(c.now())
	var added []string
	var dups int64

	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		var records plog.LogRecordSlice
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				if _, ok := span.Attributes().Get(attrDecision); !ok {
					continue
				}
				if isLate(span, rep) {
					dups++ // its stand-ins carried the decision
					continue
				}
				d := readDecision(span, rep)
				if d == nil {
					continue
				}
				if d.ID != "" {
					key := decisionKey(d.ID)
					if !c.seen.add(key) {
						dups++
						continue
					}
					added = append(added, key)
				}
				if records == (plog.LogRecordSlice{}) {
					rl := out.ResourceLogs().AppendEmpty()
					rs.Resource().CopyTo(rl.Resource())
					rl.SetSchemaUrl(rs.SchemaUrl())
					sl := rl.ScopeLogs().AppendEmpty()
					sl.Scope().SetName(metadata.ScopeName)
					records = sl.LogRecords()
				}
				fillDecisionRecord(records.AppendEmpty(), span, d, observed)
			}
		}
	}

	rep.record(ctx, c.tb)
	if dups > 0 {
		c.tb.ConnectorTriageRunsDuplicate.Add(ctx, dups)
	}
	if out.LogRecordCount() == 0 {
		return nil
	}
	c.sender.send(ctx, out, added)
	return nil
}

// fillDecisionRecord writes the log record of decision d stamped on span.
func fillDecisionRecord(lr plog.LogRecord, span ptrace.Span, d *wire.Decision, observed pcommon.Timestamp) {
	ts := span.EndTimestamp()
	if ts == 0 {
		ts = observed
	}
	lr.SetTimestamp(ts)
	lr.SetObservedTimestamp(observed)
	lr.SetTraceID(span.TraceID())
	lr.SetSpanID(span.SpanID())
	lr.SetEventName(decisionEventName)
	// A decision exists because a run failed: a warning, so that it stands
	// out in generic log backends.
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("WARN")
	// The document byte for byte; the routing fields beside it.
	lr.Body().SetStr(d.Body)
	d.PutAttributes(lr.Attributes())
}
