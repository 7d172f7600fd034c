package trajectory

import "go.opentelemetry.io/collector/pdata/ptrace"

// SpanIndex lists the spans Build read, with the resource and scope spans
// holding them, so that a caller walks a trace once: Build fills it in its
// own walk (WithIndex), and the processor's OTTL rules and annotations use
// it instead of walking the trace again.
type SpanIndex struct {
	entries []IndexedSpan
}

// IndexedSpan is one span with the resource and scope spans holding it.
type IndexedSpan struct {
	Span     ptrace.Span
	Resource ptrace.ResourceSpans
	Scope    ptrace.ScopeSpans
}

// WithIndex makes Build record every span it reads in idx (reset first).
func WithIndex(idx *SpanIndex) Option {
	return func(o *buildOptions) {
		idx.entries = idx.entries[:0]
		o.index = idx
	}
}

func (x *SpanIndex) add(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, sp ptrace.Span) {
	x.entries = append(x.entries, IndexedSpan{Span: sp, Resource: rs, Scope: ss})
}

// Spans returns every span in input order (read-only).
func (x *SpanIndex) Spans() []IndexedSpan { return x.entries }
