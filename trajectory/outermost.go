package trajectory

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Outermost is a run's outermost received span: the span whose time range
// covers every other span of the run. For a run whose root never arrived it
// says whether the invocation that span stands for is over (a received span
// has ended).
type Outermost struct {
	SpanID pcommon.SpanID
	Name   string
	Role   SpanRole
	// Error is set when the span ended with status ERROR.
	Error bool
}

// OutermostSpan returns the outermost span of run among the spans of td (the
// input Build made run from): the span that starts no later and ends no
// earlier than every other span of the run. ok is false when no span covers
// all the others (several top spans side by side: a wrapper that would
// cover them did not arrive). Linear in the spans of td.
func OutermostSpan(run *Run, td ptrace.Traces) (Outermost, bool) {
	members := make(map[pcommon.SpanID]struct{}, len(run.SpanIDs))
	for _, id := range run.SpanIDs {
		members[id] = struct{}{}
	}
	type cand struct {
		sp    ptrace.Span
		res   pcommon.Resource
		scope string
	}
	var best cand
	found := false
	var minStart, maxEnd pcommon.Timestamp
	first := true
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				if sp.TraceID() != run.TraceID {
					continue
				}
				if _, ok := members[sp.SpanID()]; !ok {
					continue
				}
				s, e := sp.StartTimestamp(), sp.EndTimestamp()
				if first || s < minStart {
					minStart = s
				}
				if first || e > maxEnd {
					maxEnd = e
				}
				first = false
				// The latest end wins; among equal ends the earliest start
				// (the wrapper around a child that ends with it).
				if !found || e > best.sp.EndTimestamp() || (e == best.sp.EndTimestamp() && s < best.sp.StartTimestamp()) {
					best, found = cand{sp, rs.Resource(), ss.Scope().Name()}, true
				}
			}
		}
	}
	if !found || best.sp.StartTimestamp() > minStart || best.sp.EndTimestamp() < maxEnd {
		return Outermost{}, false
	}
	return Outermost{
		SpanID: best.sp.SpanID(),
		Name:   best.sp.Name(),
		Role:   SpanRoleOf(best.sp, best.res, best.scope),
		Error:  best.sp.Status().Code() == ptrace.StatusCodeError,
	}, true
}

// SpanRoleOf says what a span is to a trajectory under the conventions
// Build reads, from the span alone.
func SpanRoleOf(sp ptrace.Span, res pcommon.Resource, scope string) SpanRole {
	roles := roleAttrs{mcpScope: isMCPScope(scope)}
	n := node{c: spanCtx{sp: sp, attrs: spanAttrsRoles(sp.Attributes(), &roles), res: res, scope: scope}}
	detectRole(&n, &roles)
	return SpanRole(n.role)
}
