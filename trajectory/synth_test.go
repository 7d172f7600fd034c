package trajectory

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// synth builds test traces span by span.
type synth struct {
	td    ptrace.Traces
	spans ptrace.SpanSlice
	tid   pcommon.TraceID
	clock uint64
}

func newSynth(service string) *synth {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test")
	return &synth{td: td, spans: ss.Spans(), tid: pcommon.TraceID{1, 2, 3}, clock: 1_000_000}
}

func sid(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

// span appends a span with the given id and parent (0 = none); attributes
// are strings, ints, or []string.
func (s *synth) span(id, parent uint64, name string, attrs map[string]any) ptrace.Span {
	sp := s.spans.AppendEmpty()
	sp.SetTraceID(s.tid)
	if id != 0 {
		sp.SetSpanID(sid(id))
	}
	if parent != 0 {
		sp.SetParentSpanID(sid(parent))
	}
	sp.SetName(name)
	s.clock += 1000
	sp.SetStartTimestamp(pcommon.Timestamp(s.clock))
	sp.SetEndTimestamp(pcommon.Timestamp(s.clock + 500))
	for k, v := range attrs {
		switch x := v.(type) {
		case string:
			sp.Attributes().PutStr(k, x)
		case int:
			sp.Attributes().PutInt(k, int64(x))
		case []string:
			sl := sp.Attributes().PutEmptySlice(k)
			for _, e := range x {
				sl.AppendEmpty().SetStr(e)
			}
		}
	}
	return sp
}

func fail(sp ptrace.Span, msg string) ptrace.Span {
	sp.Status().SetCode(ptrace.StatusCodeError)
	sp.Status().SetMessage(msg)
	return sp
}

func exception(sp ptrace.Span, typ, msg string) ptrace.Span {
	ev := sp.Events().AppendEmpty()
	ev.SetName("exception")
	if typ != "" {
		ev.Attributes().PutStr("exception.type", typ)
	}
	ev.Attributes().PutStr("exception.message", msg)
	return sp
}

// endAt moves a span's end time (and start before it).
func endAt(sp ptrace.Span, end uint64) ptrace.Span {
	sp.SetStartTimestamp(pcommon.Timestamp(end - 100))
	sp.SetEndTimestamp(pcommon.Timestamp(end))
	return sp
}
