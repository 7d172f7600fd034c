package classifier

import (
	"hash/maphash"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/triage-otel/triage/trajectory"
)

func (m *resultMemo) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.prev)
}

// memoRun is a run with one call of tool "lookup" whose result, fed back
// to the next model step, is text.
func memoRun(text string) *trajectory.Run {
	return &trajectory.Run{RootFound: true, Steps: []trajectory.Step{
		{Kind: trajectory.StepLLM, SpanID: sid(1), Requested: []trajectory.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{}`}}},
		{Kind: trajectory.StepTool, SpanID: sid(2), ToolName: "lookup", ToolCallID: "c1"},
		{Kind: trajectory.StepLLM, SpanID: sid(3), InputResults: []trajectory.ToolResult{{CallID: "c1", Name: "lookup", Content: text}}, OutputText: "done"},
	}}
}

// What ClassifyCall read of a result's text is taken by Classify for the
// same string (and only for it), and gives the same verdict as reading it
// again.
func TestResultTextsKeptByClassifyCallTakenByClassify(t *testing.T) {
	texts := []string{
		"Error: tool lookup is not available",
		"Unknown tool: lookup. Available tools: search",
		`{"error":{"message":"upstream returned 502"}}`,
		`{"status":"ok","items":[1,2,3]}`,
		`{"origin":"LIS","destination":"undefined","seats":2}`,
	}
	failed := 0
	for _, text := range texts {
		text = strings.Clone(text)
		fresh := mustNew(t, Options{})
		want := fresh.Classify(memoRun(text))
		if want.Outcome == OutcomeFailed {
			failed++
		}

		c := mustNew(t, Options{})
		run := memoRun(text)
		c.ClassifyCall(Call{Request: &run.Steps[0].Requested[0], RequestSpanID: sid(1), Tool: &run.Steps[1],
			Result: &run.Steps[2].InputResults[0], ResultSpanID: sid(3)})
		if c.results.size() != 1 {
			t.Fatalf("%q: ClassifyCall kept %d entries", text, c.results.size())
		}
		// An equal text in another string is read again.
		if got := c.Classify(memoRun(strings.Clone(text))); got.Outcome != want.Outcome || got.FailureType != want.FailureType {
			t.Fatalf("%q: copy classified %s/%s, want %s/%s", text, got.Outcome, got.FailureType, want.Outcome, want.FailureType)
		}
		if c.results.size() != 1 {
			t.Fatalf("%q: a copy of the text took the entry", text)
		}
		got := c.Classify(run)
		if got.Outcome != want.Outcome || got.FailureType != want.FailureType || got.Signal != want.Signal {
			t.Fatalf("%q: with the kept reading %s/%s/%s, want %s/%s/%s", text, got.Outcome, got.FailureType, got.Signal, want.Outcome, want.FailureType, want.Signal)
		}
		if c.results.size() != 0 {
			t.Fatalf("%q: Classify left the entry", text)
		}
	}
	if failed == 0 || failed == len(texts) {
		t.Fatalf("%d of %d texts fail their run: the test needs both", failed, len(texts))
	}
}

// Classify uses what was kept: an entry that says the text is an error
// report fails a call whose text reads as data; an entry whose hash is not
// the text's (another text at a reused address) is not used.
func TestClassifyTakesTheKeptReading(t *testing.T) {
	c := mustNew(t, Options{})
	text := strings.Clone(`{"status":"ok"}`)
	if v := c.Classify(memoRun(text)); v.Outcome == OutcomeFailed {
		t.Fatalf("data result failed the run: %+v", v)
	}
	m := c.results
	k := textIDOf(text)
	m.mu.Lock()
	m.putLocked(k, resultEntry{hash: maphash.String(m.seed, text) + 1, v: resultText{errorShaped: true}})
	m.mu.Unlock()
	if v := c.Classify(memoRun(text)); v.Outcome == OutcomeFailed {
		t.Fatalf("an entry of another text was used: %+v", v)
	}
	m.mu.Lock()
	m.putLocked(k, resultEntry{hash: maphash.String(m.seed, text), v: resultText{errorShaped: true}})
	m.mu.Unlock()
	if v := c.Classify(memoRun(text)); v.Outcome != OutcomeFailed {
		t.Fatalf("the kept reading was not used: %+v", v)
	}
	// The kept reading of a placeholder value is used too.
	m.mu.Lock()
	m.putLocked(k, resultEntry{hash: maphash.String(m.seed, text), v: resultText{placeholder: true}})
	m.mu.Unlock()
	if v := c.Classify(memoRun(text)); v.Outcome != OutcomeFailed || v.Signal != SignalPlaceholderValue {
		t.Fatalf("the kept placeholder reading was not used: %+v", v)
	}
}

func TestResultMemoGenerationsAreBounded(t *testing.T) {
	m := newResultMemo()
	s := "x"
	for i := range 3*maxResultEntries + 5 {
		m.putLocked(textID{p: textIDOf(s).p, n: i}, resultEntry{})
	}
	if n := m.size(); n > 2*maxResultEntries {
		t.Fatalf("%d entries kept, bound %d", n, 2*maxResultEntries)
	}
}

// Reading only what callIncidents uses of a result's text answers as
// reading all of it, on every capture run, with and without the guards'
// calls kept first.
func TestResultNeedsOnCaptures(t *testing.T) {
	byFile := captureRuns(t)
	files := slices.Sorted(maps.Keys(byFile))
	n := 0
	for _, f := range files {
		for ri := range byFile[f] {
			run := &byFile[f][ri]
			lazy := mustNew(t, Options{}).Classify(run)
			resultNeedFloor = resultNeedAll
			all := mustNew(t, Options{}).Classify(run)
			resultNeedFloor = resultNeedNone
			if !reflect.DeepEqual(lazy, all) {
				t.Fatalf("%s run %d: reading what is needed %+v, reading all %+v", f, ri, lazy, all)
			}
			n += len(lazy.Incidents)
		}
	}
	if n == 0 {
		t.Fatal("no incidents on the captures")
	}
}

// A kept entry does not keep its text alive: the text of a result may be a
// slice of a whole message history, and the memo holds up to two
// generations of entries of runs that never reach Classify.
func TestResultMemoKeepsNoTextAlive(t *testing.T) {
	c := mustNew(t, Options{})
	collected := make(chan struct{})
	func() {
		buf := make([]byte, 4096)
		copy(buf, `{"error":"upstream timed out"}`)
		for i := 30; i < len(buf); i++ {
			buf[i] = ' '
		}
		runtime.AddCleanup(&buf[0], func(ch chan struct{}) { close(ch) }, collected)
		text := unsafe.String(&buf[0], len(buf))
		cl := &classification{c: c, resultMode: resultsKeep}
		if v := cl.resultText(text, resultNeedAll); !v.errorShaped {
			t.Fatalf("the text did not read as an error: %+v", v)
		}
		if c.results.size() != 1 {
			t.Fatalf("%d entries kept, want 1", c.results.size())
		}
	}()
	for range 100 {
		runtime.GC()
		select {
		case <-collected:
			if c.results.size() != 1 {
				t.Fatalf("the entry was dropped: %d entries", c.results.size())
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the memo keeps the text of its entry alive")
}
