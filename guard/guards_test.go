package guard

import (
	"strings"
	"testing"
	"time"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
)

// loopRun: a model that asks for the same tool with the same arguments
// turn after turn; repeat turns, then a final answer and the root.
func loopRun(s *synth, turns int, args func(i int) string) []Span {
	var out []Span
	id := uint64(10)
	for i := range turns {
		out = append(out, s.llm(id, 1, 100, 20))
		out = append(out, s.tool(id+1, 1, "get_weather", args(i), false))
		id += 2
	}
	out = append(out, s.llm(id, 1, 100, 20))
	return append(out, s.root(1))
}

func same(int) string { return `{"city":"Paris"}` }

func TestLoopGuard(t *testing.T) {
	g, _ := mustGuards(t, DefaultConfig())
	spans := loopRun(newSynth(), 5, same)
	trips, at := feed(g, spans, []int{2, 2, 3, 1, 1, 1, 1})
	if len(trips) != 1 || trips[0].Guard != Loop {
		t.Fatalf("trips %v, want one loop", names(trips))
	}
	tr := trips[0]
	// The third equal call (span 15) is in the third batch.
	if tr.SpanID != sid(15) || at[0] != 2 || tr.Tool != "get_weather" || tr.FailureType != classifier.LoopDetected {
		t.Fatalf("loop trip %+v at batch %d", tr, at[0])
	}
	if !strings.Contains(tr.Reason, "get_weather called 3 times") || tr.Confidence <= 0 {
		t.Errorf("reason %q confidence %v", tr.Reason, tr.Confidence)
	}
	in := tr.Input([16]byte{9})
	if in.Phase != recovery.PhaseInFlight || in.Guard != "loop" || in.SpanID != sid(15) || in.FailureType != "loop_detected" {
		t.Errorf("input %+v", in)
	}

	// Different arguments every turn: no loop.
	trips, _ = feed(g, loopRun(newSynth(), 6, func(i int) string { return `{"city":"c` + string(rune('a'+i)) + `"}` }), repeatOnes(20))
	if len(trips) != 0 {
		t.Fatalf("distinct calls tripped %v", names(trips))
	}
	// Disabled.
	cfg := DefaultConfig()
	cfg.Loop.Enabled = false
	off, _ := mustGuards(t, cfg)
	if trips, _ := feed(off, loopRun(newSynth(), 5, same), repeatOnes(20)); len(trips) != 0 {
		t.Fatalf("disabled loop guard tripped %v", names(trips))
	}
}

// Spans already seen are ignored, and each guard trips once per run
// however long the loop goes on.
func TestGuardsTripAtMostOnce(t *testing.T) {
	g, _ := mustGuards(t, DefaultConfig())
	spans := loopRun(newSynth(), 12, same)
	r := g.NewRun()
	n := 0
	for i := range spans {
		n += len(r.Add(spans[i : i+1]))
		n += len(r.Add(spans[:i+1])) // re-sent spans
	}
	if n != 1 || !r.Tripped(Loop) {
		t.Fatalf("%d trips for one looping run, want 1", n)
	}
}

func failingRun(s *synth, fails int, thenOK bool) []Span {
	var out []Span
	id := uint64(10)
	for i := range fails {
		out = append(out, s.llm(id, 1, 10, 5))
		out = append(out, s.tool(id+1, 1, "charge_card", `{"amount":`+string(rune('1'+i))+`}`, true))
		// another tool in between does not break the streak
		out = append(out, s.tool(id+2, 1, "lookup", `{"n":`+string(rune('1'+i))+`}`, false))
		id += 3
	}
	if thenOK {
		out = append(out, s.llm(id, 1, 10, 5), s.tool(id+1, 1, "charge_card", `{"amount":9}`, false))
		id += 2
	}
	out = append(out, s.llm(id, 1, 10, 5))
	return append(out, s.root(1))
}

func TestRepeatedFailureGuard(t *testing.T) {
	g, _ := mustGuards(t, DefaultConfig())
	trips, at := feed(g, failingRun(newSynth(), 4, false), []int{3, 3, 3, 3})
	if len(trips) != 1 || trips[0].Guard != RepeatedFailure {
		t.Fatalf("trips %v", names(trips))
	}
	tr := trips[0]
	if tr.Tool != "charge_card" || tr.FailureType != classifier.ExternalFault || at[0] != 2 || len(tr.Evidence) != 3 ||
		!strings.Contains(tr.Reason, "charge_card failed 3 times in a row") || tr.Evidence[0].Signal != "http_status" {
		t.Fatalf("trip %+v at batch %d", tr, at[0])
	}
	// Two failures then a success: under the threshold, and the streak is
	// broken.
	if trips, _ := feed(g, failingRun(newSynth(), 2, true), repeatOnes(30)); len(trips) != 0 {
		t.Fatalf("two failures tripped %v", names(trips))
	}
	cfg := DefaultConfig()
	cfg.RepeatedFailure.Threshold = 5
	five, _ := mustGuards(t, cfg)
	if trips, _ := feed(five, failingRun(newSynth(), 4, false), repeatOnes(30)); len(trips) != 0 {
		t.Fatalf("threshold 5 tripped on 4 failures: %v", names(trips))
	}
}

func TestTokenAndCostBudgets(t *testing.T) {
	cfg := Config{
		Tokens: TokensConfig{MaxPerRun: 500, MaxPerSession: 1000},
		Cost: CostConfig{MaxPerSession: 0.002, Prices: map[string]Price{
			"gpt-4o":      {InputPerMillion: 100, OutputPerMillion: 100}, // a prefix of gpt-4o-mini: the longer name wins
			"gpt-4o-mini": {InputPerMillion: 1, OutputPerMillion: 4},
		}},
	}
	g, _ := mustGuards(t, cfg)
	s := newSynth()
	spans := []Span{s.llm(2, 1, 200, 50), s.llm(3, 1, 200, 50), s.llm(4, 1, 200, 50), s.root(1)}
	r := g.NewRun()
	if trips := r.Add(spans[:2]); len(trips) != 0 {
		t.Fatalf("500 tokens tripped %v", names(trips))
	}
	if u := r.Usage(); u.Tokens != 500 || !near(u.Cost, (400*1+100*4)/1e6) {
		t.Fatalf("usage %+v", u)
	}
	trips := r.Add(spans[2:3])
	if len(trips) != 1 || trips[0].Guard != Tokens || trips[0].SpanID != sid(4) ||
		!strings.Contains(trips[0].Reason, "run used 750 tokens, tokens.max_per_run is 500") || trips[0].FailureType != classifier.Unknown {
		t.Fatalf("run budget: %+v", trips)
	}
	// Session budgets from the caller's total; tokens already tripped.
	if u := r.Unreported(); u.Tokens != 750 {
		t.Fatalf("unreported %+v", u)
	}
	r.MarkReported(r.Unreported())
	if u := r.Unreported(); !u.IsZero() {
		t.Fatalf("after reporting: %+v", u)
	}
	trips = r.CheckSession(recovery.Usage{Tokens: 5000, Cost: 0.0021})
	if len(trips) != 1 || trips[0].Guard != Cost || !strings.Contains(trips[0].Reason, "session cost 0.0021") {
		t.Fatalf("session: %+v", trips)
	}
	if trips := r.CheckSession(recovery.Usage{Tokens: 9999, Cost: 9}); len(trips) != 0 {
		t.Fatalf("tripped twice: %v", names(trips))
	}

	// A recorded cost wins over the price table.
	s2 := newSynth()
	sp := s2.llm(2, 1, 10, 10)
	sp.Span.Attributes().PutDouble("gen_ai.usage.cost", 0.5)
	g2, _ := mustGuards(t, Config{Cost: CostConfig{MaxPerRun: 0.4}})
	r2 := g2.NewRun()
	if trips := r2.Add([]Span{sp}); len(trips) != 1 || trips[0].Guard != Cost {
		t.Fatalf("recorded cost: %v", names(trips))
	}
	// Budgets are off by default.
	d, _ := mustGuards(t, DefaultConfig())
	r3 := d.NewRun()
	s3 := newSynth()
	if trips := r3.Add([]Span{s3.llm(2, 1, 1e9, 1e9)}); len(trips) != 0 {
		t.Fatalf("default config tripped %v", names(trips))
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// A framework LLM span and the SDK span nested in it (through an HTTP
// span) are one call: their tokens count once, whichever arrives first.
// (When the inner span arrives after the outer one but before the span
// between them, the two are counted apart until that span arrives: the
// chain between them is unknown until then. Exporters send spans in end
// order, inner first, so this does not happen.)
func TestNestedSpansOfOneCallCountOnce(t *testing.T) {
	g, _ := mustGuards(t, Config{Tokens: TokensConfig{MaxPerRun: 150}})
	for _, order := range [][]int{{0, 1, 2}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}} {
		s := newSynth()
		outer := s.llm(2, 1, 100, 0)
		http := s.span(3, 2, "POST", map[string]any{"http.request.method": "POST"})
		inner := s.llm(4, 3, 100, 0)
		spans := []Span{outer, http, inner}
		r := g.NewRun()
		var trips []Trip
		for _, i := range order {
			trips = append(trips, r.Add(spans[i:i+1])...)
		}
		if u := r.Usage(); u.Tokens != 100 || len(trips) != 0 {
			t.Errorf("order %v: usage %+v trips %v, want one call of 100 tokens", order, u, names(trips))
		}
		one := g.NewRun()
		if trips := one.Add([]Span{spans[order[0]], spans[order[1]], spans[order[2]]}); len(trips) != 0 || one.Usage().Tokens != 100 {
			t.Errorf("one batch %v: usage %+v trips %v", order, one.Usage(), names(trips))
		}
	}
}

func TestWallClockGuard(t *testing.T) {
	g, _ := mustGuards(t, Config{WallClock: WallClockConfig{MaxPerRun: 2 * time.Millisecond}})
	s := newSynth()
	a, b, c := s.llm(2, 1, 1, 1), s.llm(3, 1, 1, 1), s.llm(4, 1, 1, 1) // 1ms apart, 0.5ms each
	r := g.NewRun()
	if trips := r.Add([]Span{a, b}); len(trips) != 0 {
		t.Fatalf("1.5ms tripped %v", names(trips))
	}
	trips := r.Add([]Span{c})
	if len(trips) != 1 || trips[0].Guard != WallClock || trips[0].SpanID != sid(4) || !strings.Contains(trips[0].Reason, "wall_clock.max_per_run is 2ms") {
		t.Fatalf("wall clock: %+v", trips)
	}
}

// MCP annotations on the definitions the model was offered (or that the
// server listed) mark tools as not idempotent.
func TestToolHintsFromDefinitions(t *testing.T) {
	g, _ := mustGuards(t, DefaultConfig())
	s := newSynth()
	llm := s.llm(2, 1, 1, 1)
	llm.Span.Attributes().PutStr("gen_ai.tool.definitions",
		`[{"type":"function","name":"send_email","annotations":{"destructiveHint":true}},{"type":"function","name":"search","annotations":{"readOnlyHint":true}}]`)
	r := g.NewRun()
	r.Add([]Span{llm})
	if why, ok := r.NonIdempotent("send_email"); !ok || !strings.Contains(why, "destructiveHint") {
		t.Errorf("send_email: %q %v", why, ok)
	}
	for _, tool := range []string{"search", "unknown"} {
		if _, ok := r.NonIdempotent(tool); ok {
			t.Errorf("%s reads as non-idempotent", tool)
		}
	}
}

func TestSessionAndIdentity(t *testing.T) {
	cls, _ := classifier.New(classifier.Options{})
	g, err := New(DefaultConfig(), cls, []string{"app.session"})
	if err != nil {
		t.Fatal(err)
	}
	s := newSynth()
	a := s.llm(2, 1, 1, 1)
	a.Span.Attributes().PutStr("gen_ai.conversation.id", "conv-1")
	b := s.llm(3, 1, 1, 1)
	b.Span.Attributes().PutStr("app.session", "configured")
	b.Span.Attributes().PutStr("gen_ai.agent.name", "planner")
	r := g.NewRun()
	r.Add([]Span{a})
	if r.Session() != "conv-1" || r.Service() != "svc" {
		t.Fatalf("session %q service %q", r.Session(), r.Service())
	}
	r.Add([]Span{b})
	if r.Session() != "configured" || r.Agent() != "planner" {
		t.Fatalf("configured session attribute should win: %q, agent %q", r.Session(), r.Agent())
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := Config{
		RepeatedFailure: RepeatedFailureConfig{Enabled: true, Threshold: 1},
		Tokens:          TokensConfig{MaxPerRun: -1, MaxPerSession: -2},
		Cost:            CostConfig{MaxPerRun: -1, Prices: map[string]Price{"": {InputPerMillion: -1}}},
		WallClock:       WallClockConfig{MaxPerRun: -time.Second},
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config validated")
	}
	for _, want := range []string{"repeated_failure.threshold", "tokens.max_per_run", "tokens.max_per_session",
		"cost.max_per_run", "cost.prices: model name", "cost.prices[].input_per_million", "wall_clock.max_per_run"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	d := DefaultConfig()
	if err := d.Validate(); err != nil || !d.Enabled() || d.SessionBudgets() {
		t.Fatalf("default config: %v enabled=%v", err, d.Enabled())
	}
}
