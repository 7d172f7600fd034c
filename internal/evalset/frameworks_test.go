package evalset

import (
	"bytes"
	"strings"
	"testing"
)

func TestByFramework(t *testing.T) {
	items := []Item{
		{Framework: "a", Label: "timeout", Kind: KindCorrect, Pass: true},
		{Framework: "a", Label: "timeout", Kind: KindUnknown},
		{Framework: "b", Label: "external_fault", Kind: KindMisroute},
		{Framework: "a", Label: LabelNone, Kind: KindFalseFailure},
		{Framework: "a", Label: LabelNone, Kind: KindCorrect, Pass: true},
		{Framework: "b", Label: "timeout", Kind: KindNotScorable},
		{Framework: "b", Label: "timeout", Kind: KindMissed},
		{Name: "corpus#1", Label: "timeout", Kind: KindCorrect, Pass: true},
	}
	got := Set{Name: "x/labels.json", Items: items}.ByFramework()
	want := []FrameworkStats{
		{Framework: "a", Failed: 2, Found: 1, Unknown: 1, OKRuns: 2, FalseFailures: 1},
		{Framework: "b", Failed: 2, Misroutes: 1, Missed: 1, NotScorable: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d frameworks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("framework %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestWriteByFrameworkSideBySide(t *testing.T) {
	on := Set{Name: "sets/on/labels.json", Items: []Item{
		{Framework: "a", Label: "timeout", Kind: KindCorrect, Pass: true},
		{Framework: "b", Label: LabelNone, Kind: KindCorrect, Pass: true},
	}}
	off := Set{Name: "sets/off/labels.json", Items: []Item{
		{Framework: "a", Label: "timeout", Kind: KindUnknown},
		{Framework: "b", Label: LabelNone, Kind: KindFalseFailure},
	}}
	corpus := Set{Name: "c.json", AllowUnknown: true, Items: []Item{{Label: "timeout", Kind: KindCorrect, Pass: true}}}
	var buf bytes.Buffer
	WriteByFramework(&buf, []Set{on, corpus, off})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("want a title, a header, 2 rows and 2 set totals, got:\n%s", buf.String())
	}
	for i, want := range [][]string{{"framework", "on", "off"}, {"a", "1/1", "0/1 (1 unknown)"}, {"b", "0/0", "0/0 (1 false failure)"},
		{"on: passed 2 of 2"}, {"off: passed 0 of 2", "unknown 1", "false failures 1 of 1"}} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("line %q lacks %q", lines[i+1], w)
			}
		}
	}
}
