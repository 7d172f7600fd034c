package triageprocessor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

type fixtureLabel struct {
	Framework   string   `json:"framework"`
	Scenario    string   `json:"scenario"`
	Label       string   `json:"label"`
	Constraints []string `json:"constraints"`
	CaptureFile string   `json:"capture_file"`
}

func loadLabels(t *testing.T) []fixtureLabel {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedDir(t), "fixtures", "frameworks", "labels.json"))
	require.NoError(t, err)
	var labels []fixtureLabel
	require.NoError(t, json.Unmarshal(b, &labels))
	require.NotEmpty(t, labels)
	return labels
}

// splitSpans returns one batch per span in capture order, which is the
// order the SDK exported them (the order their end() was called). End
// timestamps are not used: with coarse clocks a root can carry an end time
// slightly before its last child's.
func splitSpans(td ptrace.Traces) []ptrace.Traces {
	type item struct {
		rs   ptrace.ResourceSpans
		ss   ptrace.ScopeSpans
		span ptrace.Span
	}
	var items []item
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				items = append(items, item{rs, ss, ss.Spans().At(k)})
			}
		}
	}
	out := make([]ptrace.Traces, len(items))
	for i, it := range items {
		b := ptrace.NewTraces()
		it.span.CopyTo(appendScope(b, it.rs, it.ss).AppendEmpty())
		out[i] = b
	}
	return out
}

// TestFixtureAnnotationsMatchLibrary replays every shared framework capture
// through the processor and checks that each run's root carries exactly the
// verdict and failure type the library gives for the same run.
func TestFixtureAnnotationsMatchLibrary(t *testing.T) {
	labels := loadLabels(t)
	failing := 0
	for _, mode := range []string{"one_batch", "span_by_span"} {
		for _, l := range labels {
			if l.CaptureFile == "" {
				continue
			}
			t.Run(mode+"/"+l.CaptureFile, func(t *testing.T) {
				td := loadFixture(t, l.CaptureFile)
				if td.SpanCount() == 0 {
					t.Skip("the capture holds no spans (a failing first call exported nothing)")
				}
				h := newHarness(t, func(c *Config) { c.Constraints.Global = l.Constraints })
				if mode == "one_batch" {
					h.send(td)
				} else {
					for _, b := range splitSpans(td) {
						h.send(b)
					}
				}
				// Traces whose root was lost are decided after decision_wait.
				h.expire()
				require.NoError(t, h.p.Shutdown(context.Background()))
				inFlight := h.decisionSpans()
				require.Equal(t, td.SpanCount(), h.sink.SpanCount()-len(inFlight), "every span is forwarded exactly once (beside the in-flight decision spans)")

				c, err := classifier.New(classifier.Options{Constraints: l.Constraints})
				require.NoError(t, err)
				runs := trajectory.Build(td)
				require.NotEmpty(t, runs, "the library finds a run")
				fwd := h.forwarded()
				for i := range runs {
					run := &runs[i]
					if run.RootSpanID.IsEmpty() {
						continue
					}
					want := c.Classify(run)
					var roots []ptrace.Span
					if run.RootFound {
						roots = fwd[run.RootSpanID]
					} else {
						// The root was lost: the run's top spans stand in.
						assert.Empty(t, fwd[run.RootSpanID])
						for _, id := range run.SpanIDs {
							s := fwd[id][0]
							if _, parentHere := fwd[s.ParentSpanID()]; !parentHere {
								roots = append(roots, s)
								missing, _ := s.Attributes().Get(attrRootMissing)
								assert.True(t, missing.Bool())
							}
						}
					}
					require.NotEmpty(t, roots, "run root %s (found=%v) forwarded", run.RootSpanID, run.RootFound)
					for _, root := range roots {
						got, _ := strAttr(root, attrVerdict)
						assert.Equal(t, string(want.Outcome), got, "verdict of run %s", run.RootSpanID)
						got, _ = strAttr(root, attrFailureType)
						assert.Equal(t, string(want.FailureType), got, "failure type of run %s", run.RootSpanID)
						got, _ = strAttr(root, attrSignal)
						assert.Equal(t, string(want.Signal), got, "signal of run %s", run.RootSpanID)
						got, _ = strAttr(root, attrRule)
						assert.Equal(t, want.Rule, got, "rule of run %s", run.RootSpanID)
						got, _ = strAttr(root, attrReason)
						assert.Equal(t, want.Reason, got, "reason of run %s", run.RootSpanID)
						if want.Outcome == classifier.OutcomeFailed {
							got, _ = strAttr(root, attrEvidenceSpanID)
							assert.Equal(t, want.EvidenceSpanID.String(), got)
						}
					}
					if want.Outcome == classifier.OutcomeFailed {
						failing++
					}
					checkInFlight(t, mode, run, want, roots, inFlight)
					for _, inc := range want.Incidents {
						if inc.SpanID.IsEmpty() || inc.SpanID == run.RootSpanID || !run.RootFound {
							continue
						}
						assertIncident(t, fwd[inc.SpanID], inc)
					}
				}
			})
		}
	}
	assert.Positive(t, failing, "some fixture runs fail, so the comparison is not vacuous")
}

func assertIncident(t *testing.T, copies []ptrace.Span, inc classifier.Incident) {
	t.Helper()
	require.NotEmpty(t, copies, "incident span %s forwarded", inc.SpanID)
	s := copies[0]
	got, _ := strAttr(s, attrFailureType)
	// A span holding several incidents shows the last one's class.
	if got != string(inc.FailureType) {
		t.Logf("incident span %s: %s (another incident on the same span wins)", inc.SpanID, got)
		return
	}
	rec, ok := s.Attributes().Get(attrRecovered)
	require.True(t, ok)
	assert.Equal(t, pcommon.ValueTypeBool, rec.Type())
}

// checkInFlight: runs that end ok or recovered got no in-flight decision;
// in one batch with their root, no run does; a run whose final verdict is
// a loop found by the loop rule, fed span by span (or whose root never
// came), got exactly one in-flight loop decision, on the loop the final
// verdict names, and its final decision references it.
func checkInFlight(t *testing.T, mode string, run *trajectory.Run, want classifier.Verdict, roots []ptrace.Span, inFlight []ptrace.Span) {
	t.Helper()
	var mine []ptrace.Span
	spans := map[pcommon.SpanID]bool{}
	for _, id := range run.SpanIDs {
		spans[id] = true
	}
	for _, d := range inFlight {
		if d.TraceID() == run.TraceID && spans[d.ParentSpanID()] {
			mine = append(mine, d)
		}
	}
	switch {
	case want.Outcome != classifier.OutcomeFailed:
		assert.Empty(t, mine, "a %s run got an in-flight decision", want.Outcome)
	case mode == "one_batch" && run.RootFound:
		assert.Empty(t, mine, "a run sent whole with its root got an in-flight decision")
	case want.FailureType == classifier.LoopDetected && want.Signal == classifier.SignalLoop:
		require.Len(t, mine, 1, "one in-flight loop decision")
		d := mine[0]
		g, _ := strAttr(d, attrGuard)
		assert.Equal(t, "loop", g)
		// It hangs under the span that tripped the guard: the final
		// verdict's evidence when spans come in end order (guard tests);
		// in capture order (all model spans of a scope before the tool
		// spans) the loop can show earlier, on the model step asking for
		// the call.
		assert.True(t, spans[d.ParentSpanID()], "the decision span hangs under a span of the run")
		tool, _ := strAttr(d, attrTool)
		for _, inc := range want.Incidents {
			if inc.Signal == classifier.SignalLoop {
				assert.Equal(t, inc.Tool, tool, "the in-flight loop is the final verdict's loop")
			}
		}
		id, _ := strAttr(d, attrDecisionID)
		for _, root := range roots {
			doc, _ := strAttr(root, attrDecision)
			var final recovery.Decision
			require.NoError(t, json.Unmarshal([]byte(doc), &final))
			assert.Equal(t, id, final.InFlightDecisionID, "the final decision references the in-flight one")
			assert.Equal(t, recovery.PhaseFinal, final.Phase)
		}
	}
}
