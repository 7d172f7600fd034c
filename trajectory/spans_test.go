package trajectory

import (
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestForEachSpanVisitsEverySpanInOrder(t *testing.T) {
	td := ptrace.NewTraces()
	var want []string
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		for s := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			for k := range 3 {
				name := string(rune('a'+r)) + string(rune('a'+s)) + string(rune('a'+k))
				ss.Spans().AppendEmpty().SetName(name)
				want = append(want, name)
			}
		}
	}
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty() // empty scope: nothing to visit

	var got []string
	ForEachSpan(td, func(s ptrace.Span) { got = append(got, s.Name()) })
	if !slices.Equal(got, want) {
		t.Fatalf("visited %v, want %v", got, want)
	}
}
