package recovery

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/triage-otel/triage/recovery/internal/breaker"
	"github.com/triage-otel/triage/recovery/internal/fakeclock"
	"github.com/triage-otel/triage/recovery/internal/store"
)

const breakerPolicy = `
policy:
  external_fault:
    kind: circuit_breaker
    name: upstream
    failure_threshold: 3
    window: 1m
    cooldown: 30s
    inner: {kind: backoff_and_retry, max_attempts: 100, base_delay: 1s}
history:
  reset_on_success: false
`

func breakerState(t *testing.T, s store.Store, key string) breaker.State {
	t.Helper()
	var st breaker.State
	if err := s.UpdateBreaker(context.Background(), key, func(b *breaker.State) bool { st = *b; return false }); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestBreakerTransitions(t *testing.T) {
	clock := newFakeClock()
	e := newEngine(t, breakerPolicy, WithClock(clock))
	fail := func(session string) Decision { return decide(t, e, input("external_fault", session)) }

	// CLOSED: failures below the threshold pass to the inner strategy;
	// failures older than the window do not count.
	if d := fail("a"); d.Action.Kind != ActionRetry || d.Breaker.State != string(breaker.Closed) {
		t.Fatalf("closed: %+v", d)
	}
	clock.Advance(61 * time.Second)
	fail("b")
	if d := fail("c"); d.Action.Kind != ActionRetry || d.Breaker.State != string(breaker.Closed) {
		t.Fatalf("the first failure left the window; still closed: %+v", d.Breaker)
	}
	// The third failure within the window opens the breaker.
	d := fail("d")
	if d.Action.Kind != ActionEscalate || d.Breaker.State != string(breaker.Open) || d.Policy != "external_fault:circuit_breaker" {
		t.Fatalf("threshold reached: want open escalate, got %+v %s", d.Action, d.Policy)
	}
	// OPEN: denied until the cooldown has elapsed.
	clock.Advance(29 * time.Second)
	if d := fail("e"); d.Action.Kind != ActionEscalate || d.Breaker.State != string(breaker.Open) {
		t.Fatalf("within cooldown: %+v", d.Breaker)
	}
	// HALF_OPEN: the first failure after the cooldown is the one probe...
	clock.Advance(time.Second)
	probe := fail("probe-session")
	if probe.Action.Kind != ActionRetry || probe.Breaker.State != string(breaker.HalfOpen) || !probe.Breaker.Probe {
		t.Fatalf("after cooldown: want the probe, got %+v %+v", probe.Action, probe.Breaker)
	}
	// ...every other session gets the open-path answer...
	if d := fail("other"); d.Action.Kind != ActionEscalate || d.Breaker.Probe {
		t.Fatalf("second caller while half-open: %+v %+v", d.Action, d.Breaker)
	}
	// ...and a failure of the probe's own session means the probe failed.
	if d := fail("probe-session"); d.Breaker.State != string(breaker.Open) || d.Action.Kind != ActionEscalate {
		t.Fatalf("probe failed: want open again, got %+v", d.Breaker)
	}
	clock.Advance(30 * time.Second)
	if d := fail("probe-2"); !d.Breaker.Probe {
		t.Fatalf("second probe: %+v", d.Breaker)
	}
	// A successful run closes the half-open breaker.
	if err := e.RecordSuccess(context.Background(), SuccessInput{SessionID: "probe-2"}); err != nil {
		t.Fatal(err)
	}
	if st := breakerState(t, e.store, "upstream"); st.Current() != breaker.Closed || len(st.Failures) != 0 {
		t.Fatalf("after success: %+v", st)
	}
	if d := fail("f"); d.Action.Kind != ActionRetry || d.Breaker.State != string(breaker.Closed) {
		t.Fatalf("closed again: %+v", d.Breaker)
	}
}

func TestBreakerLostProbeIsReplaced(t *testing.T) {
	clock := newFakeClock()
	e := newEngine(t, breakerPolicy, WithClock(clock))
	for _, s := range []string{"a", "b", "c"} {
		decide(t, e, input("external_fault", s))
	}
	clock.Advance(30 * time.Second)
	if d := decide(t, e, input("external_fault", "p1")); !d.Breaker.Probe {
		t.Fatal("want a probe")
	}
	// The probe never reports; after another cooldown a new one is admitted.
	clock.Advance(30 * time.Second)
	if d := decide(t, e, input("external_fault", "p2")); !d.Breaker.Probe || d.Breaker.State != string(breaker.HalfOpen) {
		t.Fatalf("lost probe: %+v", d.Breaker)
	}
}

// openBreaker drives the breaker of e to OPEN and past its cooldown.
func openBreaker(t *testing.T, e *Engine, clock *fakeclock.Clock) {
	t.Helper()
	for _, s := range []string{"a", "b", "c"} {
		decide(t, e, input("external_fault", s))
	}
	clock.Advance(31 * time.Second)
}

// countProbes makes n concurrent failing sessions and counts the probes.
func countProbes(t *testing.T, engines []*Engine, n int) (probes, denied int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			e := engines[i%len(engines)]
			d, err := e.Decide(context.Background(), input("external_fault", "concurrent-"+string(rune('A'+i))))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if d.Breaker.Probe {
				probes++
				if d.Action.Kind != ActionRetry {
					t.Errorf("probe got %s", d.Action.Kind)
				}
			} else if d.Action.Kind == ActionEscalate {
				denied++
			}
		}()
	}
	close(start)
	wg.Wait()
	return probes, denied
}

func TestHalfOpenAdmitsExactlyOneProbeConcurrently(t *testing.T) {
	clock := newFakeClock()
	e := newEngine(t, breakerPolicy, WithClock(clock))
	openBreaker(t, e, clock)
	probes, denied := countProbes(t, []*Engine{e}, 32)
	if probes != 1 || denied != 31 {
		t.Fatalf("probes %d denied %d, want 1 and 31", probes, denied)
	}
}

// toolBreakerChain is a chain whose primary is a tool-scoped breaker,
// falling back to a cache tool.
const toolBreakerChain = `
policy:
  external_fault:
    kind: chain
    primary:
      kind: circuit_breaker
      failure_threshold: 2
      scope: tool
      inner: {kind: backoff_and_retry, max_attempts: 5}
    fallback: {kind: fallback, target: "tool:cache", max_attempts: 3}
`

func TestChainFallsBackWhileBreakerIsOpen(t *testing.T) {
	clock := newFakeClock()
	e := newEngine(t, toolBreakerChain, WithClock(clock))
	pay := input("external_fault", "s1")
	if d := decide(t, e, pay); d.Action.Kind != ActionRetry {
		t.Fatalf("closed: %+v", d.Action)
	}
	// Another tool has its own breaker state.
	other := input("external_fault", "s2")
	other.Tool = "search"
	if d := decide(t, e, other); d.Action.Kind != ActionRetry {
		t.Fatalf("search breaker closed: %+v", d.Action)
	}
	d := decide(t, e, input("external_fault", "s3"))
	if d.Action.Kind != ActionFallback || d.Action.Target != "tool:cache" || d.Policy != "external_fault.fallback:fallback" {
		t.Fatalf("breaker open: want fallback, got %+v %s", d.Action, d.Policy)
	}
	if d.Breaker == nil || d.Breaker.State != string(breaker.Open) || d.Breaker.Key != "external_fault.primary|tool=payments" {
		t.Fatalf("breaker report: %+v", d.Breaker)
	}
	// A success of a run that used the tool closes a half-open breaker of that tool only.
	clock.Advance(31 * time.Second)
	if d := decide(t, e, input("external_fault", "s4")); !d.Breaker.Probe {
		t.Fatalf("want probe: %+v", d.Breaker)
	}
	_ = e.RecordSuccess(context.Background(), SuccessInput{Tools: []string{"search"}})
	if st := breakerState(t, e.store, "external_fault.primary|tool=payments"); st.Current() != breaker.HalfOpen {
		t.Fatalf("a success on another tool must not close it: %+v", st)
	}
	_ = e.RecordSuccess(context.Background(), SuccessInput{Tools: []string{"payments"}})
	if st := breakerState(t, e.store, "external_fault.primary|tool=payments"); st.Current() != breaker.Closed {
		t.Fatalf("success on the tool closes it: %+v", st)
	}
}

// Only a tool-scoped breaker reads a success's tools: callers skip listing
// them otherwise (the processor does), so this must say so exactly.
func TestReadsSuccessToolsOnlyWithAToolScopedBreaker(t *testing.T) {
	for name, c := range map[string]struct {
		policy string
		want   bool
	}{
		"no breaker": {`
policy:
  external_fault: {kind: backoff_and_retry, max_attempts: 5}
`, false},
		"service-scoped breaker": {`
policy:
  external_fault:
    kind: circuit_breaker
    failure_threshold: 2
    scope: service
    inner: {kind: backoff_and_retry, max_attempts: 5}
`, false},
		"tool-scoped breaker in a chain": {toolBreakerChain, true},
	} {
		if got := newEngine(t, c.policy).ReadsSuccessTools(); got != c.want {
			t.Errorf("%s: ReadsSuccessTools = %v, want %v", name, got, c.want)
		}
	}
}
