package recovery

import (
	"context"
	"strings"
	"testing"

	"github.com/go-viper/mapstructure/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.yaml.in/yaml/v3"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery/internal/fakeclock"
)

func newFakeClock() *fakeclock.Clock { return fakeclock.New() }

// The IDs of the test failures, and their hex as the decision writes them.
const (
	testTraceHex = "0af7651916cd43dd8448eb211c80319c"
	testSpanHex  = "b7ad6b7169203331"
)

var (
	testTrace = pcommon.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
	testSpan  = pcommon.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31}
)

func input(failureType, session string) Input {
	return Input{
		FailureType: classifier.FailureType(failureType),
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

// decodeConfig unmarshals YAML the way the collector's component does for
// its recovery block, onto the library's plain options: YAML → map →
// mapstructure with a string-to-duration hook, unknown keys rejected, a
// snake_case key matching the field of that name (the options carry no
// tags: the component owns the YAML).
func decodeConfig(t testing.TB, doc string) Options {
	t.Helper()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	var cfg Options
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:  mapstructure.StringToTimeDurationHookFunc(),
		Result:      &cfg,
		ErrorUnused: true,
		MatchName: func(key, field string) bool {
			return strings.EqualFold(strings.ReplaceAll(key, "_", ""), field)
		},
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
