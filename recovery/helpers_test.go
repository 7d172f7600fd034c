package recovery

import (
	"context"
	"strings"
	"testing"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/triage-otel/triage/recovery/internal/fakeclock"
)

func newFakeClock() *fakeclock.Clock { return fakeclock.New() }

const (
	testTrace = "0af7651916cd43dd8448eb211c80319c"
	testSpan  = "b7ad6b7169203331"
)

func input(failureType, session string) Input {
	return Input{
		FailureType: failureType,
		Confidence:  0.9,
		Evidence:    []Evidence{{SpanID: testSpan, Signal: "http_status", Reason: "HTTP 503"}},
		TraceID:     testTrace,
		SpanID:      testSpan,
		SessionID:   session,
		Service:     "checkout-agent",
		Agent:       "planner",
		Tool:        "payments",
	}
}

// decodeConfig unmarshals YAML the way the collector does: YAML → map →
// mapstructure with a string-to-duration hook, unknown keys rejected.
func decodeConfig(t testing.TB, doc string) Config {
	t.Helper()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	var cfg Config
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:  mapstructure.StringToTimeDurationHookFunc(),
		Result:      &cfg,
		ErrorUnused: true,
		TagName:     "mapstructure",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(raw); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return cfg
}

func newEngine(t testing.TB, yamlDoc string, opts ...Option) *Engine {
	t.Helper()
	cfg := decodeConfig(t, yamlDoc)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	e, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func decide(t *testing.T, e *Engine, in Input) Decision {
	t.Helper()
	d, err := e.Decide(context.Background(), in)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	return d
}

// step is the expected shape of one decision in a walk.
type step struct {
	kind    ActionKind
	delayMS int64
	policy  string
}

func checkWalk(t *testing.T, e *Engine, in Input, want []step) []Decision {
	t.Helper()
	var out []Decision
	for i, w := range want {
		d := decide(t, e, in)
		if d.Action.Kind != w.kind || d.Action.DelayMS != w.delayMS || d.Policy != w.policy || d.Attempt != i+1 {
			t.Fatalf("failure %d: got kind=%s delay=%d policy=%s attempt=%d, want kind=%s delay=%d policy=%s attempt=%d",
				i+1, d.Action.Kind, d.Action.DelayMS, d.Policy, d.Attempt, w.kind, w.delayMS, w.policy, i+1)
		}
		out = append(out, d)
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
