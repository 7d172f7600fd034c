package decisionrecord

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
)

func record(body string, attrs map[string]string) plog.LogRecord {
	lr := plog.NewLogRecord()
	lr.Body().SetStr(body)
	for k, v := range attrs {
		lr.Attributes().PutStr(k, v)
	}
	return lr
}

func TestFromLogRecord(t *testing.T) {
	doc := `{"decision_id":"d-json","failure_type":"timeout","action":{"kind":"replan"}}`

	d, err := FromLogRecord(record("  "+doc+"\n", nil))
	require.NoError(t, err)
	assert.Equal(t, "d-json", d.ID)
	assert.Equal(t, "timeout", d.FailureType)
	assert.Equal(t, "replan", d.ActionKind)
	assert.Equal(t, doc, string(d.JSON))

	d, err = FromLogRecord(record(doc, map[string]string{
		AttrDecisionID: "d-attr", AttrFailureType: "loop_detected", AttrActionKind: "abort",
	}))
	require.NoError(t, err)
	assert.Equal(t, "d-attr", d.ID, "the record attribute wins")
	assert.Equal(t, "loop_detected", d.FailureType)
	assert.Equal(t, "abort", d.ActionKind)

	// No id anywhere: a stable content hash, so retries keep the same key.
	d1, err := FromLogRecord(record(`{"action":"not-an-object"}`, nil))
	require.NoError(t, err)
	d2, err := FromLogRecord(record(`{"action":"not-an-object"}`, nil))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(d1.ID, "sha256-"))
	assert.Equal(t, d1.ID, d2.ID)
	assert.Empty(t, d1.ActionKind)

	// Numeric id is still a key.
	d, err = FromLogRecord(record(`{"decision_id":42}`, nil))
	require.NoError(t, err)
	assert.Equal(t, "42", d.ID)

	// Map body.
	lr := plog.NewLogRecord()
	m := lr.Body().SetEmptyMap()
	m.PutStr("decision_id", "d-map")
	m.PutEmptyMap("action").PutStr("kind", "escalate")
	m.PutInt("attempt", 3)
	d, err = FromLogRecord(lr)
	require.NoError(t, err)
	assert.Equal(t, "d-map", d.ID)
	assert.Equal(t, "escalate", d.ActionKind)
	assert.JSONEq(t, `{"decision_id":"d-map","action":{"kind":"escalate"},"attempt":3}`, string(d.JSON))

	// Invalid UTF-8 inside a string is replaced, keeping the JSON valid.
	d, err = FromLogRecord(record("{\"decision_id\":\"d-utf\",\"evidence\":\"bad \xff byte\"}", nil))
	require.NoError(t, err)
	assert.True(t, json.Valid(d.JSON) && utf8.Valid(d.JSON), string(d.JSON))
	assert.Contains(t, string(d.JSON), "bad \uFFFD byte")

	// Bytes body holding JSON.
	lr = plog.NewLogRecord()
	lr.Body().SetEmptyBytes().FromRaw([]byte(doc))
	d, err = FromLogRecord(lr)
	require.NoError(t, err)
	assert.Equal(t, "d-json", d.ID)
}

func TestFromLogRecordRejectsNonDecisions(t *testing.T) {
	for name, lr := range map[string]plog.LogRecord{
		"empty":     plog.NewLogRecord(),
		"text":      record("connection reset", nil),
		"array":     record(`[1,2]`, nil),
		"truncated": record(`{"decision_id":"x"`, nil),
		"string":    record(`"just a string"`, nil),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromLogRecord(lr)
			assert.ErrorIs(t, err, ErrInvalidBody)
		})
	}
}

// batch builds two resources, the first with two scopes, holding ids in order.
func batch() plog.Logs {
	ld := plog.NewLogs()
	add := func(sl plog.ScopeLogs, ids ...string) {
		for _, id := range ids {
			lr := sl.LogRecords().AppendEmpty()
			lr.Body().SetStr(`{"decision_id":"` + id + `"}`)
		}
	}
	r1 := ld.ResourceLogs().AppendEmpty()
	r1.Resource().Attributes().PutStr("service.name", "one")
	s1 := r1.ScopeLogs().AppendEmpty()
	s1.Scope().SetName("scope-a")
	add(s1, "a1", "a2")
	s2 := r1.ScopeLogs().AppendEmpty()
	s2.Scope().SetName("scope-b")
	add(s2, "b1", "b2")
	r2 := ld.ResourceLogs().AppendEmpty()
	r2.Resource().Attributes().PutStr("service.name", "two")
	add(r2.ScopeLogs().AppendEmpty(), "c1")
	return ld
}

func ids(ld plog.Logs) []string {
	var out []string
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				d, err := FromLogRecord(lr)
				if err == nil {
					out = append(out, d.ID)
				}
			}
		}
	}
	return out
}

func TestDeliverReturnsOnlyTheUndeliveredRest(t *testing.T) {
	var sent []string
	errDown := errors.New("receiver down")
	err := Deliver(batch(), func(d Decision) error {
		if d.ID == "b2" {
			return errDown
		}
		if d.ID == "a2" {
			return consumererror.NewPermanent(errors.New("400"))
		}
		sent = append(sent, d.ID)
		return nil
	}, func(d Decision, _ error) { sent = append(sent, "dropped:"+d.ID) })

	require.Error(t, err)
	assert.ErrorIs(t, err, errDown)
	assert.False(t, consumererror.IsPermanent(err))
	assert.Equal(t, []string{"a1", "dropped:a2", "b1"}, sent)

	var logsErr consumererror.Logs
	require.ErrorAs(t, err, &logsErr)
	rest := logsErr.Data()
	assert.Equal(t, []string{"b2", "c1"}, ids(rest))
	// Resource and scope of the rest are kept.
	require.Equal(t, 2, rest.ResourceLogs().Len())
	svc, _ := rest.ResourceLogs().At(0).Resource().Attributes().Get("service.name")
	assert.Equal(t, "one", svc.Str())
	assert.Equal(t, "scope-b", rest.ResourceLogs().At(0).ScopeLogs().At(0).Scope().Name())
}

func TestDeliverAllDroppedIsPermanent(t *testing.T) {
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("garbage")
	var dropped int
	err := Deliver(ld, func(Decision) error { return nil }, func(_ Decision, err error) {
		dropped++
		assert.ErrorIs(t, err, ErrInvalidBody)
	})
	assert.True(t, consumererror.IsPermanent(err))
	assert.Equal(t, 1, dropped)

	assert.NoError(t, Deliver(plog.NewLogs(), func(Decision) error { return nil }, func(Decision, error) {}))
}
