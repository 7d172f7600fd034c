package trajectory

import "go.opentelemetry.io/collector/pdata/ptrace"

// SpanIndex lists the spans Build read, with the resource and scope spans
// holding them, so that a caller walks a trace once: Build fills it in its
// own walk (WithIndex), and the processor's OTTL rules and annotations use
// it instead of walking the trace again.
type SpanIndex struct {
	entries []IndexedSpan
	// written is the most entries any Build wrote since the last Release:
	// Release clears only that part of the room (the rest was never
	// written), so a pooled index that once grew to a large trace costs
	// each later one its own spans, not its capacity.
	written int
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
		idx.written = max(idx.written, len(idx.entries))
		idx.entries = idx.entries[:0]
		o.index = idx
	}
}

func (x *SpanIndex) add(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, sp ptrace.Span) {
	x.entries = append(x.entries, IndexedSpan{Span: sp, Resource: rs, Scope: ss})
}

// Spans returns every span in input order (read-only).
func (x *SpanIndex) Spans() []IndexedSpan { return x.entries }

// Release drops every span the index refers to, keeping its room for the
// next Build.
func (x *SpanIndex) Release() {
	clear(x.entries[:max(x.written, len(x.entries))])
	x.entries, x.written = x.entries[:0], 0
}
