package trajectory

import "go.opentelemetry.io/collector/pdata/ptrace"

// ForEachSpan calls fn with every span of td, in the order the batch holds
// them (resource spans, then scope spans, then spans).
func ForEachSpan(td ptrace.Traces, fn func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				fn(spans.At(k))
			}
		}
	}
}
