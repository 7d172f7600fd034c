package recovery

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// decisionsFromEveryStrategy produces real decisions through the engine,
// one policy entry per strategy kind (and the breaker and exhausted paths).
func decisionsFromEveryStrategy(t *testing.T) []Decision {
	t.Helper()
	clock := newFakeClock()
	e := newEngine(t, `
disable_default_policy: true
policy:
  wrong_tool_called: {kind: retry_with_tool_manifest, max_attempts: 1}
  timeout: {kind: backoff_and_retry, max_attempts: 1, base_delay: 250ms}
  loop_detected: {kind: replan}
  plan_incomplete: {kind: resume_from_subgoal}
  schema_mismatch: {kind: rollback_to_checkpoint, checkpoint_id: cp-1}
  context_overflow: {kind: suspend, reason: "needs approval"}
  constraint_ignored: {kind: abort}
  unknown: {kind: escalate}
  external_fault:
    kind: chain
    primary:
      kind: circuit_breaker
      failure_threshold: 1
      inner: {kind: sequence, steps: [{kind: backoff_and_retry, max_attempts: 1}]}
    fallback: {kind: fallback, target: "model:backup"}
`, WithClock(clock))
	var out []Decision
	for _, ft := range []string{"wrong_tool_called", "wrong_tool_called", "timeout", "loop_detected", "plan_incomplete",
		"schema_mismatch", "context_overflow", "constraint_ignored", "unknown", "external_fault", "external_fault"} {
		out = append(out, decide(t, e, input(ft, "schema-session")))
	}
	kinds := map[ActionKind]bool{}
	for _, d := range out {
		kinds[d.Action.Kind] = true
	}
	for _, k := range ActionKinds {
		if !kinds[k] {
			t.Fatalf("no decision with action %s; the schema test must cover every kind", k)
		}
	}
	return out
}

func TestDecisionsValidateAgainstSchema(t *testing.T) {
	for _, d := range decisionsFromEveryStrategy(t) {
		raw, err := d.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateDecisionJSON(raw); err != nil {
			t.Errorf("%s: %v\n%s", d.Policy, err, raw)
		}
	}
}

func TestSchemaRejectsMutatedDecisions(t *testing.T) {
	d := decisionsFromEveryStrategy(t)[0]
	raw, _ := d.JSON()
	mutations := map[string]func(m map[string]any){
		"missing decision_id":  func(m map[string]any) { delete(m, "decision_id") },
		"bad trace id":         func(m map[string]any) { m["trace_id"] = "abc" },
		"unknown failure type": func(m map[string]any) { m["failure_type"] = "cosmic_rays" },
		"unknown action kind":  func(m map[string]any) { m["action"].(map[string]any)["kind"] = "pray" },
		"negative delay":       func(m map[string]any) { m["action"].(map[string]any)["delay_ms"] = -5 },
		"confidence above 1":   func(m map[string]any) { m["confidence"] = 1.5 },
		"attempt zero":         func(m map[string]any) { m["attempt"] = 0 },
		"time not RFC 3339":    func(m map[string]any) { m["time"] = "yesterday" },
		"extra field":          func(m map[string]any) { m["secret"] = "x" },
		"evidence not array":   func(m map[string]any) { m["evidence"] = "HTTP 503" },
	}
	for name, mutate := range mutations {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		mutate(m)
		doc, _ := json.Marshal(m)
		if err := ValidateDecisionJSON(doc); err == nil {
			t.Errorf("%s: mutated document validated", name)
		}
	}
	if err := ValidateDecisionJSON([]byte("{not json")); err == nil {
		t.Error("malformed JSON validated")
	}
}

func TestDecisionDocumentShape(t *testing.T) {
	d := decisionsFromEveryStrategy(t)[2] // timeout backoff
	raw, _ := d.JSON()
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	for _, k := range []string{"decision_id", "trace_id", "span_id", "session_id", "service", "agent", "failure_type",
		"confidence", "evidence", "action", "attempt", "max_attempts", "policy", "time"} {
		if _, ok := m[k]; !ok {
			t.Errorf("document lacks %s: %s", k, raw)
		}
	}
	a := m["action"].(map[string]any)
	if a["kind"] != "retry" || a["delay_ms"] != float64(250) {
		t.Errorf("action %v", a)
	}
	if tm, err := time.Parse(time.RFC3339, m["time"].(string)); err != nil || !strings.HasSuffix(m["time"].(string), "Z") || tm.IsZero() {
		t.Errorf("time %v: %v", m["time"], err)
	}
}
