package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

type problem struct {
	p   Problem
	key string
}

func read(t *testing.T, attrs map[string]any, body string, opts ReadOptions) (Decision, bool, []problem) {
	t.Helper()
	m := pcommon.NewMap()
	require.NoError(t, m.FromRaw(attrs))
	var got []problem
	d, ok := ReadDecision(m, body, func(p Problem, key string) { got = append(got, problem{p, key}) }, opts)
	return d, ok, got
}

func allAttrs() map[string]any {
	return map[string]any{
		AttrDecisionID: "d-1", AttrFailureType: "timeout", AttrActionKind: "backoff_and_retry",
		AttrAgent: "a", AttrSessionID: "s", AttrPhase: PhaseFinal,
	}
}

func TestReadDecisionAttributesWinAndBodyIsKept(t *testing.T) {
	body := ` {"decision_id":"doc","failure_type":"other","action":{"kind":"abort"},"agent":"x","session_id":"y"} `
	d, ok, problems := read(t, allAttrs(), body, ReadOptions{})
	require.True(t, ok)
	assert.Empty(t, problems)
	assert.Equal(t, Decision{Body: body, ID: "d-1", FailureType: "timeout", ActionKind: "backoff_and_retry", Agent: "a", SessionID: "s", Phase: PhaseFinal}, d)
}

// With every routing attribute present the document is not parsed: an
// object-shaped body that is not JSON passes unless Validate asks.
func TestReadDecisionDoesNotParseWhenAttributesSuffice(t *testing.T) {
	body := `{"decision_id": oops}`
	_, ok, problems := read(t, allAttrs(), body, ReadOptions{})
	assert.True(t, ok)
	assert.Empty(t, problems)

	_, ok, problems = read(t, allAttrs(), body, ReadOptions{Validate: true})
	assert.False(t, ok)
	assert.Equal(t, []problem{{NotObject, AttrDecision}}, problems)

	_, ok, _ = read(t, allAttrs(), `{"decision_id":"x"}`, ReadOptions{Validate: true})
	assert.True(t, ok)
}

func TestReadDecisionFallsBackToTheDocument(t *testing.T) {
	body := `{"decision_id":"doc-8","failure_type":"timeout","agent":"doc-agent","session_id":"s8","action":{"kind":"backoff"}}`
	d, ok, problems := read(t, map[string]any{AttrFailureType: "external_fault"}, body, ReadOptions{})
	require.True(t, ok)
	assert.Empty(t, problems)
	assert.Equal(t, Decision{Body: body, ID: "doc-8", FailureType: "external_fault", ActionKind: "backoff", Agent: "doc-agent", SessionID: "s8"}, d)

	// A missing routing field needs the document: when it is not JSON the
	// decision is unusable.
	_, ok, problems = read(t, map[string]any{AttrDecisionID: "x"}, `{"truncated": `+"\n}", ReadOptions{})
	assert.False(t, ok)
	assert.Equal(t, []problem{{NotObject, AttrDecision}}, problems)
}

func TestReadDecisionOddTypes(t *testing.T) {
	body := `{"decision_id":12345,"action":{"kind":7},"agent":null,"session_id":{"n":1},"failure_type":"t\u00e9"}`
	d, ok, problems := read(t, map[string]any{AttrActionKind: true}, body, ReadOptions{})
	require.True(t, ok)
	assert.Equal(t, []problem{{WrongType, AttrActionKind}}, problems)
	assert.Equal(t, "12345", d.ID)
	assert.Equal(t, "true", d.ActionKind, "a non-string attribute through its string form")
	assert.Empty(t, d.Agent)
	assert.Equal(t, `{"n":1}`, d.SessionID)
	assert.Equal(t, "té", d.FailureType)

	d, ok, problems = read(t, nil, `{"failure_type":"timeout","action":"not an object"}`, ReadOptions{})
	require.True(t, ok)
	assert.Empty(t, d.ActionKind)
	assert.Equal(t, []problem{{Missing, AttrDecisionID}}, problems, "a document without an id is usable, the id is reported missing")
}

func TestReadDecisionRejectsWhatIsNotAnObject(t *testing.T) {
	for _, body := range []string{"", "  ", "not json", `["an","array"]`, `{"decision_id": "x", "action": {"kind": "retry"`, `"{}"`, "{"} {
		_, ok, problems := read(t, allAttrs(), body, ReadOptions{})
		assert.False(t, ok, "%q", body)
		assert.Equal(t, []problem{{NotObject, AttrDecision}}, problems, "%q", body)
	}
}

func TestPutAttributes(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr("other", "kept")
	d := Decision{Body: "{}", ID: "d", ActionKind: "abort", SessionID: "s"}
	d.PutAttributes(m)
	assert.Equal(t, map[string]any{"other": "kept", AttrDecisionID: "d", AttrActionKind: "abort", AttrSessionID: "s"}, m.AsRaw())

	// What PutAttributes writes, ReadDecision reads back without the
	// document.
	full := Decision{Body: `{"decision_id": not-parsed}`, ID: "d", FailureType: "timeout", ActionKind: "abort", Agent: "a", SessionID: "s", Phase: PhaseInFlight, Guard: "loop"}
	m = pcommon.NewMap()
	full.PutAttributes(m)
	got, ok := ReadDecision(m, full.Body, nil, ReadOptions{})
	require.True(t, ok)
	assert.Equal(t, full, got)
}

// The phase and guard of an in-flight decision come from the attributes,
// else from the document; a final decision's guard is never looked for.
func TestReadDecisionPhaseAndGuard(t *testing.T) {
	body := `{"decision_id":"d","phase":"in_flight","guard":"tokens"}`
	d, ok, _ := read(t, map[string]any{AttrDecisionID: "d"}, body, ReadOptions{})
	require.True(t, ok)
	assert.Equal(t, PhaseInFlight, d.Phase)
	assert.Equal(t, "tokens", d.Guard)
	// Final: with the attributes the processor writes, the document is not
	// parsed (it is not JSON here).
	attrs := allAttrs()
	d, ok, problems := read(t, attrs, `{"not": parsed}`, ReadOptions{})
	require.True(t, ok)
	assert.Empty(t, problems)
	assert.Equal(t, PhaseFinal, d.Phase)
	assert.Empty(t, d.Guard)
}
