package strategy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery/internal/store"
)

// env is the environment of a failure of the payments tool, with a jitter
// source that always answers 0.5.
func env(failureType, session string) *Env {
	return WithRuntime(Env{
		FailureType: classifier.FailureType(failureType),
		SessionID:   session,
		Service:     "checkout-agent",
		Agent:       "planner",
		Tool:        "payments",
		Now:         time.Unix(1700000000, 0),
	}, store.NewMemory(store.MemoryOptions{}), func() float64 { return 0.5 })
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

var ctx = context.Background()

func TestLeafStrategies(t *testing.T) {
	in := env("schema_mismatch", "s1")
	in.Subgoal = "book the hotel"
	in.CheckpointID = "cp-7"
	cases := []struct {
		s     Strategy
		kind  ActionKind
		max   int
		check func(t *testing.T, a Action)
	}{
		{RetryWithToolManifest{}, ActionRetry, 3, func(t *testing.T, a Action) {
			if !contains(a.Hint, "JSON Schema") || !contains(a.Hint, `"payments"`) {
				t.Errorf("schema hint should name the schema and the tool: %q", a.Hint)
			}
		}},
		{BackoffAndRetry{}, ActionRetry, 5, func(t *testing.T, a Action) {
			if a.DelayMS != 1000 {
				t.Errorf("first backoff delay %d, want 1000", a.DelayMS)
			}
		}},
		{Replan{Hint: "try the search API"}, ActionReplan, 3, func(t *testing.T, a Action) {
			if a.Hint != "try the search API" {
				t.Errorf("hint %q", a.Hint)
			}
		}},
		{ResumeFromSubgoal{}, ActionResume, 2, func(t *testing.T, a Action) {
			if a.Subgoal != "book the hotel" {
				t.Errorf("subgoal %q, want the run's", a.Subgoal)
			}
		}},
		{RollbackToCheckpoint{}, ActionRollback, 1, func(t *testing.T, a Action) {
			if a.CheckpointID != "cp-7" {
				t.Errorf("checkpoint %q, want the run's", a.CheckpointID)
			}
		}},
		{RollbackToCheckpoint{CheckpointID: "before-api-call"}, ActionRollback, 1, func(t *testing.T, a Action) {
			if a.CheckpointID != "before-api-call" {
				t.Errorf("checkpoint %q, want the configured one", a.CheckpointID)
			}
		}},
		{Fallback{Target: "model:small-local"}, ActionFallback, 1, func(t *testing.T, a Action) {
			if a.Target != "model:small-local" {
				t.Errorf("target %q", a.Target)
			}
		}},
		{Suspend{Reason: "approve refund"}, ActionSuspend, 1, func(t *testing.T, a Action) {
			if a.Reason != "approve refund" {
				t.Errorf("reason %q", a.Reason)
			}
		}},
		{Escalate{}, ActionEscalate, Unlimited, func(t *testing.T, a Action) {
			if !contains(a.Reason, "schema_mismatch") {
				t.Errorf("reason %q should name the failure type", a.Reason)
			}
		}},
		{Abort{Reason: "permanent"}, ActionAbort, Unlimited, func(t *testing.T, a Action) {}},
	}
	for _, c := range cases {
		t.Run(c.s.Kind(), func(t *testing.T) {
			if c.s.MaxAttempts() != c.max {
				t.Errorf("max attempts %d, want %d", c.s.MaxAttempts(), c.max)
			}
			r, err := c.s.Decide(ctx, in, "schema_mismatch", 1)
			if err != nil {
				t.Fatal(err)
			}
			if r.Action.Kind != c.kind || r.Leaf != c.s.Kind() || r.Path != "schema_mismatch" {
				t.Fatalf("got %+v", r)
			}
			c.check(t, r.Action)
		})
	}
}

func TestManifestAndReplanHintsFitTheFailure(t *testing.T) {
	wrong, _ := RetryWithToolManifest{}.Decide(ctx, env("wrong_tool_called", "s"), "p", 1)
	if !contains(wrong.Action.Hint, "manifest") {
		t.Errorf("wrong tool hint should point at the manifest: %q", wrong.Action.Hint)
	}
	for ft, word := range map[string]string{
		"loop_detected": "repeat", "context_overflow": "Summarise", "constraint_ignored": "constraint",
	} {
		r, _ := Replan{}.Decide(ctx, env(ft, "s"), "p", 1)
		if !contains(r.Action.Hint, word) {
			t.Errorf("%s replan hint %q lacks %q", ft, r.Action.Hint, word)
		}
	}
}

func TestResumeRequiringSubgoalEscalatesWithoutOne(t *testing.T) {
	r, _ := ResumeFromSubgoal{RequireSubgoal: true}.Decide(ctx, env("plan_incomplete", "s"), "p", 1)
	if r.Action.Kind != ActionEscalate {
		t.Fatalf("got %s, want escalate when no sub-goal is known", r.Action.Kind)
	}
	r, _ = ResumeFromSubgoal{}.Decide(ctx, env("plan_incomplete", "s"), "p", 1)
	if r.Action.Kind != ActionResume || r.Action.Subgoal != "" {
		t.Fatalf("got %+v, want resume from the runtime's first incomplete sub-goal", r.Action)
	}
}

func TestBackoffDelays(t *testing.T) {
	b := BackoffAndRetry{BaseDelay: 500 * time.Millisecond, MaxDelay: 3 * time.Second}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	for i, w := range want {
		if got := b.Delay(i + 1); got != w {
			t.Errorf("attempt %d: delay %v, want %v", i+1, got, w)
		}
	}
	if got := (BackoffAndRetry{Multiplier: 3}).Delay(3); got != 9*time.Second {
		t.Errorf("multiplier 3, attempt 3: %v, want 9s", got)
	}
	if got := (BackoffAndRetry{}).Delay(10000); got != time.Minute {
		t.Errorf("huge attempt must cap at max delay, got %v", got)
	}
	// Jitter is off by default: the same attempt always gets the same delay.
	r1, _ := BackoffAndRetry{}.Decide(ctx, env("timeout", "s"), "p", 2)
	if r1.Action.DelayMS != 2000 {
		t.Errorf("no jitter: delay %d, want 2000", r1.Action.DelayMS)
	}
	// With jitter 0.5 and rand 0.5 the delay shrinks by a quarter.
	r2, _ := BackoffAndRetry{Jitter: 0.5}.Decide(ctx, env("timeout", "s"), "p", 2)
	if r2.Action.DelayMS != 1500 {
		t.Errorf("jitter: delay %d, want 1500", r2.Action.DelayMS)
	}
}

func TestSequenceRoutesAttemptsToSteps(t *testing.T) {
	seq := Sequence{Steps: []Strategy{BackoffAndRetry{Max: 2}, Replan{Max: 1}, Fallback{Target: "x", Max: 2}}}
	if seq.MaxAttempts() != 5 {
		t.Fatalf("budget %d, want 5", seq.MaxAttempts())
	}
	want := []struct {
		kind ActionKind
		path string
		leaf int
	}{
		{ActionRetry, "e.steps[0]", 1}, {ActionRetry, "e.steps[0]", 2}, {ActionReplan, "e.steps[1]", 1},
		{ActionFallback, "e.steps[2]", 1}, {ActionFallback, "e.steps[2]", 2},
	}
	for i, w := range want {
		r, err := seq.Decide(ctx, env("external_fault", "s"), "e", i+1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Action.Kind != w.kind || r.Path != w.path || r.Attempt != w.leaf {
			t.Errorf("attempt %d: got %s %s #%d, want %s %s #%d", i+1, r.Action.Kind, r.Path, r.Attempt, w.kind, w.path, w.leaf)
		}
	}
	r, _ := seq.Decide(ctx, env("external_fault", "s"), "e", 6)
	if r.Action.Kind != ActionEscalate || r.Leaf != "exhausted" {
		t.Errorf("past the budget: got %+v, want exhausted escalation", r)
	}
	// A terminal step makes the sequence unlimited without overflowing.
	if got := (Sequence{Steps: []Strategy{Replan{}, Abort{}, Escalate{}}}).MaxAttempts(); got != Unlimited {
		t.Errorf("budget with terminal steps %d, want Unlimited", got)
	}
}

func TestChainPrimaryThenFallback(t *testing.T) {
	c := Chain{Primary: RetryWithToolManifest{Max: 2}, Fallback: Fallback{Target: "tool:cache"}}
	kinds := []ActionKind{ActionRetry, ActionRetry, ActionFallback}
	for i, k := range kinds {
		r, _ := c.Decide(ctx, env("wrong_tool_called", "s"), "w", i+1)
		if r.Action.Kind != k {
			t.Errorf("attempt %d: %s, want %s", i+1, r.Action.Kind, k)
		}
	}
	if c.MaxAttempts() != 3 {
		t.Errorf("budget %d, want 3", c.MaxAttempts())
	}
}
