package classifier

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// captureRuns builds every run of every shared capture.
func captureRuns(t testing.TB) map[string][]trajectory.Run {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sharedDir(t), "fixtures", "frameworks", "*", "*.json"))
	out := map[string][]trajectory.Run{}
	for _, f := range files {
		if filepath.Ext(f[:len(f)-len(".json")]) == ".logs" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
		if err != nil {
			continue // labels.json
		}
		out[f] = trajectory.Build(td)
	}
	if len(out) == 0 {
		t.Fatal("no captures")
	}
	return out
}

// ClassifyCall on the parts of each call of a capture says what Classify
// says of that call in its run: failed or not, and the same class.
func TestClassifyCallMatchesClassify(t *testing.T) {
	c := mustNew(t, Options{})
	n, nFailed := 0, 0
	for f, runs := range captureRuns(t) {
		for ri := range runs {
			run := &runs[ri]
			cl := &classification{c: c, run: run, steps: run.Steps, schemas: c.schemas}
			cl.collectCalls()
			cl.callIncidents()
			byCall := map[int]Incident{}
			for _, in := range cl.inc {
				if in.kind == kindCall {
					byCall[in.callIx] = in.Incident
				}
			}
			for k := range cl.calls {
				cc := &cl.calls[k]
				var call Call
				if cc.llmIx >= 0 {
					llm := &run.Steps[cc.llmIx]
					for i := range llm.Requested {
						rq := llm.Requested[i]
						if rq.Name == cc.name && (cc.id == "" || rq.ID == cc.id) {
							call.Request = &rq
							break
						}
					}
					call.Offered, call.RequestSpanID = llm.Offered, llm.SpanID
				}
				if cc.toolIx >= 0 {
					call.Tool = &run.Steps[cc.toolIx]
				}
				if cc.result != nil {
					call.Result = cc.result
					call.ResultSpanID = run.Steps[cc.resultLLMIx].SpanID
				}
				if call.Request == nil && call.Tool == nil {
					continue
				}
				inc, failed, ok := c.ClassifyCall(call)
				n++
				if failed != cc.failed || ok != cc.ok {
					t.Errorf("%s call %d (%s): ClassifyCall failed=%v ok=%v, Classify failed=%v ok=%v", f, k, cc.name, failed, ok, cc.failed, cc.ok)
					continue
				}
				if want, has := byCall[k]; has {
					nFailed++
					if inc.FailureType != want.FailureType || inc.Signal != want.Signal || inc.SpanID != want.SpanID {
						t.Errorf("%s call %d (%s): ClassifyCall %s/%s span %s, Classify %s/%s span %s", f, k, cc.name,
							inc.FailureType, inc.Signal, inc.SpanID, want.FailureType, want.Signal, want.SpanID)
					}
				}
			}
		}
	}
	if n == 0 || nFailed == 0 {
		t.Fatalf("compared %d calls, %d failed: the captures should have both", n, nFailed)
	}
	t.Logf("%d calls compared, %d failed", n, nFailed)
}

func TestClassifyCallStructure(t *testing.T) {
	c := mustNew(t, Options{})
	offered := []trajectory.ToolDef{{Name: "get_weather", Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	// A tool the model was not offered, with no tool span: wrong tool.
	inc, failed, _ := c.ClassifyCall(Call{Request: &trajectory.ToolCall{ID: "1", Name: "get_forecast", Arguments: `{}`}, Offered: offered})
	if !failed || inc.FailureType != WrongToolCalled || inc.Signal != SignalManifest {
		t.Errorf("unknown tool: failed=%v %+v", failed, inc)
	}
	// Arguments that fail the schema.
	inc, failed, _ = c.ClassifyCall(Call{Request: &trajectory.ToolCall{ID: "2", Name: "get_weather", Arguments: `{"city":3}`}, Offered: offered})
	if !failed || inc.FailureType != SchemaMismatch {
		t.Errorf("bad arguments: failed=%v %+v", failed, inc)
	}
	// A good call that ran is ok; one not yet run is neither.
	tool := trajectory.Step{Kind: trajectory.StepTool, SpanID: sid(3), ToolName: "get_weather", Result: `{"temp":3}`}
	if _, failed, ok := c.ClassifyCall(Call{Request: &trajectory.ToolCall{ID: "3", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, Offered: offered, Tool: &tool}); failed || !ok {
		t.Errorf("good call: failed=%v ok=%v", failed, ok)
	}
	if _, failed, ok := c.ClassifyCall(Call{Request: &trajectory.ToolCall{ID: "4", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, Offered: offered}); failed || ok {
		t.Errorf("pending call: failed=%v ok=%v", failed, ok)
	}
	// An error fed back as text fails the call.
	res := trajectory.ToolResult{Content: "Error: upstream returned 502 Bad Gateway"}
	inc, failed, _ = c.ClassifyCall(Call{Tool: &tool, Result: &res})
	if !failed || inc.FailureType != ExternalFault || inc.SpanID != sid(3) {
		t.Errorf("error result: failed=%v %+v", failed, inc)
	}
	if _, failed, ok := c.ClassifyCall(Call{}); failed || ok {
		t.Error("empty call classified")
	}
}

// The streaming detector finds what detectLoop finds, also when a call's
// failure becomes known only after the call was added.
func TestLoopDetectorStreams(t *testing.T) {
	c := mustNew(t, Options{})
	type spec struct {
		tool, args string
		failed     bool
	}
	cases := []struct {
		name  string
		calls []spec
		want  int // index of the call completing the loop, -1 none
	}{
		{"three equal", []spec{{"a", `{"x":1}`, false}, {"a", `{"x":1}`, false}, {"a", `{"x":1}`, false}}, 2},
		{"retries after late-known failures", []spec{{"a", `{"x":1}`, true}, {"a", `{"x":1}`, true}, {"a", `{"x":1}`, false}}, -1},
		{"window slides", []spec{{"a", `{}`, false}, {"b", `{}`, false}, {"c", `{}`, false}, {"a", `{}`, false}, {"d", `{}`, false}, {"e", `{}`, false}, {"f", `{}`, false}, {"a", `{}`, false}, {"a", `{}`, false}}, 8},
	}
	for _, tc := range cases {
		d := c.NewLoopDetector()
		got := -1
		for i, s := range tc.calls {
			if _, ok := d.Add(s.tool, s.args, nil, false); ok && got < 0 {
				got = i
			}
			if s.failed {
				d.LastFailed()
			}
		}
		if got != tc.want {
			t.Errorf("%s: loop at %d, want %d", tc.name, got, tc.want)
		}
		lc := make([]loopCall, len(tc.calls))
		for i, s := range tc.calls {
			lc[i] = newLoopCall(s.tool, s.args, s.failed, i, i)
		}
		r, ok := detectLoop(lc, DefaultLoopThreshold, DefaultLoopWindow, 0)
		if ok != (tc.want >= 0) || (ok && r.lastIx != tc.want) {
			t.Errorf("%s: detectLoop %v at %d, want %d", tc.name, ok, r.lastIx, tc.want)
		}
	}
}

// A pooled classification lent to ClassifyCall keeps nothing of the calls
// read before: each capture call, read by a Classifier that read all the
// calls before it (and whole runs in between), gets the answer a new
// Classifier gives.
func TestPooledClassifyCallsAreFresh(t *testing.T) {
	byFile := captureRuns(t)
	files := slices.Sorted(maps.Keys(byFile))
	shared := mustNew(t, Options{})
	n, nFailed := 0, 0
	for _, f := range files {
		runs := byFile[f]
		for ri := range runs {
			run := &runs[ri]
			for si := range run.Steps {
				st := &run.Steps[si]
				var calls []Call
				for i := range st.Requested {
					calls = append(calls, Call{Request: &st.Requested[i], RequestSpanID: st.SpanID, Offered: st.Offered})
				}
				if st.Kind == trajectory.StepTool {
					calls = append(calls, Call{Tool: st})
				}
				for i := range st.InputResults {
					calls = append(calls, Call{Result: &st.InputResults[i], ResultSpanID: st.SpanID})
				}
				for _, call := range calls {
					inc, failed, ok := shared.ClassifyCall(call)
					winc, wfailed, wok := mustNew(t, Options{}).ClassifyCall(call)
					if inc != winc || failed != wfailed || ok != wok {
						t.Fatalf("%s run %d step %d: after other calls %+v %v %v, alone %+v %v %v", f, ri, si, inc, failed, ok, winc, wfailed, wok)
					}
					n++
					if failed {
						nFailed++
					}
				}
			}
			// Classify takes what the calls kept (textmemo.go,
			// resultmemo.go) and must answer as a new Classifier.
			if got, want := shared.Classify(run), mustNew(t, Options{}).Classify(run); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s run %d: after its calls %+v, alone %+v", f, ri, got, want)
			}
		}
	}
	if n < 100 || nFailed == 0 {
		t.Fatalf("only %d capture calls, %d failed", n, nFailed)
	}
}
