package triageprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/redistest"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// decisionAttrs are the attributes only a run with a decision carries.
var decisionAttrs = []string{
	attrDecision, attrDecisionID, attrActionKind, attrActionDelayMS, attrActionHint,
	attrActionTarget, attrAttempt, attrMaxAttempts, attrPolicy, attrSessionID,
}

// stampedDecision reads and checks the decision stamped on a span: the
// document validates against the JSON Schema and the attributes repeat its
// fields.
func stampedDecision(t *testing.T, s ptrace.Span) recovery.Decision {
	t.Helper()
	raw, ok := strAttr(s, attrDecision)
	require.True(t, ok, "span %s carries %s", s.SpanID(), attrDecision)
	require.NoError(t, recovery.ValidateDecisionJSON([]byte(raw)), raw)
	var d recovery.Decision
	require.NoError(t, json.Unmarshal([]byte(raw), &d))
	id, _ := strAttr(s, attrDecisionID)
	assert.Equal(t, d.DecisionID, id)
	kind, _ := strAttr(s, attrActionKind)
	assert.Equal(t, string(d.Action.Kind), kind)
	delay, ok := s.Attributes().Get(attrActionDelayMS)
	require.True(t, ok)
	assert.Equal(t, d.Action.DelayMS, delay.Int())
	attempt, _ := s.Attributes().Get(attrAttempt)
	assert.Equal(t, int64(d.Attempt), attempt.Int())
	maxA, _ := s.Attributes().Get(attrMaxAttempts)
	assert.Equal(t, int64(d.MaxAttempts), maxA.Int())
	pol, _ := strAttr(s, attrPolicy)
	assert.Equal(t, d.Policy, pol)
	sess, _ := strAttr(s, attrSessionID)
	assert.Equal(t, d.SessionID, sess)
	hint, hasHint := strAttr(s, attrActionHint)
	assert.Equal(t, d.Action.Hint != "", hasHint)
	assert.Equal(t, d.Action.Hint, hint)
	ft, _ := strAttr(s, attrFailureType)
	assert.Equal(t, ft, d.FailureType, "the document's failure type is the verdict's")
	assert.Equal(t, s.TraceID().String(), d.TraceID)
	return d
}

func assertNoDecision(t *testing.T, s ptrace.Span) {
	t.Helper()
	for _, k := range decisionAttrs {
		_, ok := s.Attributes().Get(k)
		assert.False(t, ok, "span %s must not carry %s", s.SpanID(), k)
	}
}

// TestFixtureDecisions replays every shared framework capture: each failed
// run's root (or its stand-ins) carries one decision that validates against
// the schema and whose failure type is the verdict's; ok and recovered runs
// carry none.
func TestFixtureDecisions(t *testing.T) {
	labels := loadLabels(t)
	failed, clean := 0, 0
	for _, l := range labels {
		if l.CaptureFile == "" {
			continue
		}
		t.Run(l.CaptureFile, func(t *testing.T) {
			td := loadFixture(t, l.CaptureFile)
			h := newHarness(t, func(c *Config) { c.Constraints.Global = l.Constraints })
			h.send(td)
			h.expire()
			require.NoError(t, h.p.Shutdown(context.Background()))

			c, err := classifier.New(classifier.Options{Constraints: l.Constraints})
			require.NoError(t, err)
			runs := trajectory.Build(td)
			fwd := h.forwarded()
			for i := range runs {
				run := &runs[i]
				want := c.Classify(run)
				var roots []ptrace.Span
				if run.RootFound {
					roots = fwd[run.RootSpanID]
				} else {
					for _, id := range run.SpanIDs {
						s := fwd[id][0]
						if _, parentHere := fwd[s.ParentSpanID()]; !parentHere {
							roots = append(roots, s)
						}
					}
				}
				require.NotEmpty(t, roots)
				ids := map[string]bool{}
				for _, root := range roots {
					agent, ok := strAttr(root, attrAgent)
					assert.Equal(t, run.Agent != "", ok, "triage.agent on every run root with an agent")
					assert.Equal(t, run.Agent, agent)
					if want.Outcome != classifier.OutcomeFailed {
						assertNoDecision(t, root)
						_, hasTool := root.Attributes().Get(attrTool)
						assert.False(t, hasTool, "triage.tool only on failed runs")
						continue
					}
					d := stampedDecision(t, root)
					assert.Equal(t, string(want.FailureType), d.FailureType)
					assert.Equal(t, 1, d.Attempt, "a fresh processor: first failure of the session")
					in := recovery.InputFromVerdict(&want, run.TraceID, run.RootSpanID)
					tool, _ := strAttr(root, attrTool)
					assert.Equal(t, in.Tool, tool)
					assert.Equal(t, in.Tool, d.Tool)
					ids[d.DecisionID] = true
				}
				if want.Outcome == classifier.OutcomeFailed {
					assert.Len(t, ids, 1, "one decision per failed run, shared by its stand-ins")
					failed++
				} else {
					clean++
				}
			}
		})
	}
	assert.Positive(t, failed, "some fixture runs fail")
	assert.Positive(t, clean, "some fixture runs are ok or recovered")
}

// sessionRun is genaiRun with a failing tool and the conversation id on
// the first chat span only (not on the root): the session is found on any
// span of the run.
func sessionRun(conv, toolErr string) []spanSpec {
	spans := genaiRun(toolErr)
	out := make([]spanSpec, len(spans))
	for i, s := range spans {
		s.attrs = maps.Clone(s.attrs)
		if s.id == 2 && conv != "" {
			s.attrs["gen_ai.conversation.id"] = conv
		}
		out[i] = s
	}
	return out
}

// walkPolicy answers external faults with two delayed retries then one
// replan: a budget of 3, past which the engine escalates.
func walkPolicy(c *Config) {
	c.Recovery.Policy = mustPolicy(map[string]any{
		"external_fault": map[string]any{"kind": "sequence", "steps": []any{
			map[string]any{"kind": "backoff_and_retry", "max_attempts": 2, "base_delay": "1s"},
			map[string]any{"kind": "replan", "max_attempts": 1, "hint": "The upstream service keeps failing: plan without it."},
		}},
	})
}

// mustPolicy decodes policy entries written as the YAML writes them.
func mustPolicy(raw map[string]any) PolicyConfig {
	entries, err := strategyEntries(raw)
	if err != nil {
		panic(err)
	}
	return PolicyConfig{entries: entries}
}

type step struct {
	kind    recovery.ActionKind
	delayMS int64
	policy  string
}

var walk = []step{
	{recovery.ActionRetry, 1000, "external_fault.steps[0]:backoff_and_retry"},
	{recovery.ActionRetry, 2000, "external_fault.steps[0]:backoff_and_retry"},
	{recovery.ActionReplan, 0, "external_fault.steps[1]:replan"},
	{recovery.ActionEscalate, 0, "external_fault:exhausted"},
	{recovery.ActionEscalate, 0, "external_fault:exhausted"},
}

const upstreamDown = "upstream returned 502 Bad Gateway"

func TestSessionWalksSequenceThenEscalates(t *testing.T) {
	h := newHarness(t, walkPolicy)
	for i, want := range walk {
		h.send(agentTrace(traceID(uint64(100+i)), "svc", sessionRun("conv-walk", upstreamDown)...))
		root := rootOf(t, h, traceID(uint64(100+i)))
		d := stampedDecision(t, root)
		require.Equal(t, "external_fault", d.FailureType, "fixture sanity")
		assert.Equal(t, "conv-walk", d.SessionID)
		assert.Equal(t, i+1, d.Attempt)
		assert.Equal(t, 3, d.MaxAttempts)
		assert.Equal(t, want.kind, d.Action.Kind, "failure %d", i+1)
		assert.Equal(t, want.delayMS, d.Action.DelayMS, "failure %d", i+1)
		assert.Equal(t, want.policy, d.Policy, "failure %d", i+1)
	}
	assert.Equal(t, int64(2), sumValue(t, h, "recovery_decisions", attribute.String("action", "retry")))
	assert.Equal(t, int64(1), sumValue(t, h, "recovery_decisions", attribute.String("action", "replan")))
	assert.Equal(t, int64(2), sumValue(t, h, "recovery_decisions", attribute.String("action", "escalate")))

	// Another session has its own budget.
	h.send(agentTrace(traceID(200), "svc", sessionRun("conv-other", upstreamDown)...))
	assert.Equal(t, 1, stampedDecision(t, rootOf(t, h, traceID(200))).Attempt)
	// No session attribute: the trace is the session.
	h.send(agentTrace(traceID(201), "svc", sessionRun("", upstreamDown)...))
	d := stampedDecision(t, rootOf(t, h, traceID(201)))
	assert.Equal(t, 1, d.Attempt)
	assert.Equal(t, "trace:"+traceID(201).String(), d.SessionID)

	// A successful run of the session resets its budget
	// (reset_on_success) and gets no decision.
	h.send(agentTrace(traceID(300), "svc", sessionRun("conv-walk", "")...))
	ok := rootOf(t, h, traceID(300))
	v, _ := strAttr(ok, attrVerdict)
	require.Equal(t, "ok", v)
	assertNoDecision(t, ok)
	h.send(agentTrace(traceID(301), "svc", sessionRun("conv-walk", upstreamDown)...))
	assert.Equal(t, 1, stampedDecision(t, rootOf(t, h, traceID(301))).Attempt)
}

func TestConfiguredSessionAttribute(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Recovery.SessionAttributes = []string{"app.user"} })
	for i := range 2 {
		spans := sessionRun("conv-"+fmt.Sprint(i), upstreamDown) // different conversations ...
		spans[3].attrs = maps.Clone(spans[3].attrs)
		spans[3].attrs["app.user"] = "user-7" // ... same configured session
		h.send(agentTrace(traceID(uint64(400+i)), "svc", spans...))
		d := stampedDecision(t, rootOf(t, h, traceID(uint64(400+i))))
		assert.Equal(t, "user-7", d.SessionID)
		assert.Equal(t, i+1, d.Attempt)
	}
}

func rootOf(t *testing.T, h *harness, tid pcommon.TraceID) ptrace.Span {
	t.Helper()
	var out []ptrace.Span
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
			if s.TraceID() == tid && s.SpanID() == spanID(1) {
				out = append(out, s)
			}
		})
	}
	require.Len(t, out, 1, "root of trace %s forwarded once", tid)
	return out[0]
}

func TestPlantedSecretsNeverStamped(t *testing.T) {
	const (
		openAIKey = "sk-proj-Zx81mQ2vL0pT7rN4kW9sB3yH6cJ5dF1g"
		awsKey    = "AKIAIOSFODNN7EXAMPLE"
		bearer    = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	)
	h := newHarness(t, func(c *Config) {
		// An operator hint that quotes a key by mistake is redacted too.
		c.Recovery.Policy = mustPolicy(map[string]any{
			"external_fault": map[string]any{"kind": "replan", "hint": "retry with api_key=" + openAIKey},
		})
	})
	spans := sessionRun("conv-secret", "upstream returned 502 Bad Gateway: Authorization: Bearer "+bearer+" key "+openAIKey)
	for i := range spans {
		spans[i].attrs = maps.Clone(spans[i].attrs)
	}
	spans[1].attrs["gen_ai.tool.call.arguments"] = `{"api_key":"` + openAIKey + `","aws":"` + awsKey + `","q":"weather"}`
	// Even a tool name. (After "_" the AWS key id pattern's \b does not
	// match: a gap of recovery's redactor, reported, not tested here.)
	spans[1].attrs["gen_ai.tool.name"] = "lookup-" + awsKey
	spans[2].attrs["gen_ai.input.messages"] = `[{"role":"user","parts":[{"type":"text","content":"my key is ` + openAIKey + `"}]}]`
	tid := traceID(500)
	h.send(agentTrace(tid, "svc", spans...))

	d := stampedDecision(t, rootOf(t, h, tid))
	require.Equal(t, "external_fault", d.FailureType)
	assert.Contains(t, d.Action.Hint, recovery.Redacted)
	stamped := 0
	for _, td := range h.sink.AllTraces() {
		eachSpan(td, func(_ ptrace.ResourceSpans, s ptrace.Span) {
			s.Attributes().Range(func(k string, v pcommon.Value) bool {
				if !strings.HasPrefix(k, "triage.") {
					return true
				}
				stamped++
				for _, secret := range []string{openAIKey, awsKey, bearer} {
					assert.NotContains(t, v.AsString(), secret, "attribute %s of span %s", k, s.SpanID())
				}
				return true
			})
		})
	}
	assert.Greater(t, stamped, len(decisionAttrs), "the check saw the stamped attributes")
}

// TestLateRootReusesDecision: a run decided without its root (after
// decision_wait) gets its decision on the stand-ins; the root arriving
// later carries the same decision from the cache and the engine is not
// asked again (the session's next failure is attempt 2, not 3).
func TestLateRootReusesDecision(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DecisionWait = time.Second })
	tid := traceID(600)
	spans := sessionRun("conv-late", upstreamDown)
	h.send(agentTrace(tid, "svc", spans[:3]...))
	h.now = h.now.Add(2 * time.Second)
	h.p.decideExpired(context.Background())
	require.Equal(t, 3, h.sink.SpanCount())

	var standIns []recovery.Decision
	for _, copies := range h.forwarded() {
		if missing, ok := copies[0].Attributes().Get(attrRootMissing); ok && missing.Bool() {
			if v, _ := strAttr(copies[0], attrVerdict); v == "failed" {
				standIns = append(standIns, stampedDecision(t, copies[0]))
			}
		}
	}
	require.NotEmpty(t, standIns, "the stand-ins of the rootless failed run carry the decision")
	first := standIns[0]
	for _, d := range standIns {
		assert.Equal(t, first.DecisionID, d.DecisionID, "one decision for the run")
	}
	assert.Equal(t, spanID(1).String(), first.SpanID, "the decision names the missing root")

	h.send(agentTrace(tid, "svc", spans[3]))
	root := rootOf(t, h, tid)
	late := stampedDecision(t, root)
	assert.Equal(t, first.DecisionID, late.DecisionID, "the late root reuses the decision")
	raw1, _ := json.Marshal(first)
	raw2, _ := json.Marshal(late)
	assert.JSONEq(t, string(raw1), string(raw2))
	assert.Equal(t, int64(1), sumValue(t, h, "recovery_decisions"), "Decide was called once")

	h.send(agentTrace(traceID(601), "svc", sessionRun("conv-late", upstreamDown)...))
	assert.Equal(t, 2, stampedDecision(t, rootOf(t, h, traceID(601))).Attempt)
	assert.Equal(t, int64(2), sumValue(t, h, "recovery_decisions"))
}

func TestRecoveryDisabled(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Recovery.Enabled = false })
	h.send(agentTrace(traceID(700), "svc", sessionRun("conv", upstreamDown)...))
	root := rootOf(t, h, traceID(700))
	v, _ := strAttr(root, attrVerdict)
	require.Equal(t, "failed", v)
	assertNoDecision(t, root)
	agent, _ := strAttr(root, attrAgent)
	assert.Equal(t, "a", agent, "the run identity is stamped without recovery too")
	tool, _ := strAttr(root, attrTool)
	assert.Equal(t, "lookup", tool)
	assert.Zero(t, sumValue(t, h, "recovery_decisions"))
}

// TestRedisDownDegradesToMemory: an unreachable Redis never costs a
// decision; the calls served from memory are counted.
func TestRedisDownDegradesToMemory(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens there
	h := newHarness(t, func(c *Config) {
		walkPolicy(c)
		c.Recovery.History.Redis.Endpoint = addr
	})
	for i := range 3 {
		h.send(agentTrace(traceID(uint64(800+i)), "svc", sessionRun("conv-down", upstreamDown)...))
		d := stampedDecision(t, rootOf(t, h, traceID(uint64(800+i))))
		assert.Equal(t, i+1, d.Attempt, "history kept in memory meanwhile")
	}
	assert.Positive(t, sumValue(t, h, "recovery_degraded", attribute.String("operation", "attempt")))
	assert.Zero(t, sumValue(t, h, "recovery_errors"))
}

func TestHistoryEvictionsCounted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Recovery.History.MaxSessions = 2 })
	for i := range 5 {
		h.send(agentTrace(traceID(uint64(900+i)), "svc", sessionRun(fmt.Sprintf("conv-%d", i), upstreamDown)...))
	}
	assert.Equal(t, int64(3), sumValue(t, h, "recovery_history_evicted", attribute.String("history", "session")))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts redis-server from PATH on a free port with persistence
// off. Without it the test is skipped, unless TRIAGE_REQUIRE_REDIS=1 (CI),
// where it fails.
func startRedis(t *testing.T) string {
	t.Helper()
	bin := redistest.Binary(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	for range 100 {
		if c.Ping(context.Background()).Err() == nil {
			return addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not answer", addr)
	return ""
}

// TestTwoProcessorsShareOneRedis: two collectors (processor instances)
// sharing one Redis walk one sequence for a session whose failing runs
// reach them alternately.
func TestTwoProcessorsShareOneRedis(t *testing.T) {
	addr := startRedis(t)
	withRedis := func(c *Config) {
		walkPolicy(c)
		c.Recovery.History.Redis.Endpoint = addr
		c.Recovery.History.Redis.Timeout = 500 * time.Millisecond
		c.Recovery.History.Redis.KeyPrefix = "tp:"
	}
	a, b := newHarness(t, withRedis), newHarness(t, withRedis)
	for i, want := range walk {
		h := a
		if i%2 == 1 {
			h = b
		}
		tid := traceID(uint64(1000 + i))
		h.send(agentTrace(tid, "svc", sessionRun("conv-shared", upstreamDown)...))
		d := stampedDecision(t, rootOf(t, h, tid))
		assert.Equal(t, i+1, d.Attempt, "failure %d", i+1)
		assert.Equal(t, want.kind, d.Action.Kind, "failure %d", i+1)
		assert.Equal(t, want.policy, d.Policy, "failure %d", i+1)
	}
	for _, h := range []*harness{a, b} {
		assert.Zero(t, sumValue(t, h, "recovery_degraded"), "Redis answered every call")
	}
	// The history is in Redis, under the configured prefix.
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	n, err := c.HGet(context.Background(), "tp:h:conv-shared", "external_fault").Int()
	require.NoError(t, err)
	assert.Equal(t, len(walk), n)

	// A success seen by one collector resets the session for both.
	a.send(agentTrace(traceID(1100), "svc", sessionRun("conv-shared", "")...))
	b.send(agentTrace(traceID(1101), "svc", sessionRun("conv-shared", upstreamDown)...))
	assert.Equal(t, 1, stampedDecision(t, rootOf(t, b, traceID(1101))).Attempt)
}
