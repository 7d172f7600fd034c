package trajectory

import "go.opentelemetry.io/collector/pdata/pcommon"

// A consumer that reads a trace span by span as it arrives (the processor's
// in-flight guards, with SpanReader) has read most of its step spans by the
// time the root arrives; reading them again in Build is most of what the
// root costs on long runs (each chat span carries the conversation so far).
// WithReadSteps hands those readings to Build, which then reads only the
// spans nobody read before: the root's own batch.

// ReadSteps gives Build the steps SpanReader.Read returned for spans of the
// input.
type ReadSteps interface {
	// ReadStep writes into st the Step SpanReader.Read returned for the
	// span with this ID when it read the span as a model or tool call
	// (Role SpanLLM or SpanTool) and reports whether it has one. Build
	// takes the step over (it may modify what its slices hold): each is
	// asked for once, by one Build.
	ReadStep(id pcommon.SpanID, st *Step) bool
}

// WithReadSteps makes Build take the step of a model or tool call span from
// src instead of reading the span again, when src has it for the span's ID
// and the reading names the span (its ID, parent, name and times). Build
// reads the span itself when its ID is on several spans of the trace (which
// one src read is not known) and when log events are joined to it
// (WithLogs: they complete the step before its redacted placeholders are
// dropped). The result is the same as without the option provided src's
// steps are SpanReader's readings of the same spans.
func WithReadSteps(src ReadSteps) Option {
	return func(o *buildOptions) { o.readSteps = src }
}

// readStepOf reads the step of step span n into st (a zero Step): src's
// reading of it when usable, else readStep's.
func (b *runBuilder) readStepOf(n *node, st *Step) {
	if b.readSteps != nil && !n.sharedID && !n.c.hasLogEvents() {
		sp := n.c.sp
		if b.readSteps.ReadStep(sp.SpanID(), st) {
			if st.SpanID == sp.SpanID() && st.ParentID == sp.ParentSpanID() && st.Start == sp.StartTimestamp() &&
				st.End == sp.EndTimestamp() && st.Name == sp.Name() && st.Kind == stepKindOf(n.role) {
				// mergeEvidence appends to Errors: not into src's array.
				st.Errors = st.Errors[:len(st.Errors):len(st.Errors)]
				return
			}
			*st = Step{}
		}
	}
	ev := readErrors(n.c.sp, n.c.attrs)
	readStep(n, &ev, st)
}

func stepKindOf(r spanRole) StepKind {
	if r == roleTool {
		return StepTool
	}
	return StepLLM
}

// hasLogEvents reports whether GenAI log events are joined to the span.
func (c *spanCtx) hasLogEvents() bool {
	if c.logs == nil {
		return false
	}
	_, ok := c.logs.bySpan[spanKey{c.sp.TraceID(), c.sp.SpanID()}]
	return ok
}
