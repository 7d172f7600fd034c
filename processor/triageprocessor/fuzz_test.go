package triageprocessor

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

// FuzzConsumeTraces feeds arbitrary OTLP protobuf payloads, split in two
// batches, through a processor with tiny limits and an OTTL rule: it must
// not panic and must forward exactly the valid spans it received (those
// without a trace ID or span ID are dropped and counted).
func FuzzConsumeTraces(f *testing.F) {
	m := &ptrace.ProtoMarshaler{}
	for _, td := range []ptrace.Traces{
		agentTrace(traceID(1), "svc", genaiRun("")...),
		agentTrace(traceID(2), "svc", genaiRun("upstream returned 502 Bad Gateway")[:3]...),
		benchTrace(3, 12, true),
		timedBatch(traceID(4), "svc", looping(4)[:7]...), // trips the loop guard
	} {
		b, err := m.MarshalTraces(td)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(2))
	}
	f.Fuzz(func(t *testing.T, payload []byte, split uint8) {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(payload)
		if err != nil {
			return
		}
		cfg := createDefaultConfig().(*Config)
		cfg.NumTraces = 2
		cfg.MaxSpansPerTrace = 3
		cfg.MaxTraceBytes = 2048
		cfg.DecisionCacheSize = 2
		cfg.Rules = []RuleConfig{{Name: "r", FailureType: "timeout", Conditions: []string{`IsMatch(span.name, "tool")`, `span.attributes["x"] == 1`}}}
		sink := new(consumertest.TracesSink)
		p, err := newTriageProcessor(processortest.NewNopSettings(metadata.Type), cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		first, second := splitResources(td, int(split))
		for _, b := range []ptrace.Traces{first, second} {
			if !p.Capabilities().MutatesData {
				b.MarkReadOnly()
			}
			if err := p.ConsumeTraces(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		// Every valid input span is forwarded once; in-flight decision
		// spans are added.
		valid := inputSpanCount(td)
		got := 0
		for _, out := range sink.AllTraces() {
			got += inputSpanCount(out)
		}
		if got != valid {
			t.Fatalf("forwarded %d spans, received %d valid ones", got, valid)
		}
	})
}

// inputSpanCount counts the spans of td that are valid (have IDs) and are not
// in-flight decision spans.
func inputSpanCount(td ptrace.Traces) int {
	n := 0
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				s := ss.Spans().At(k)
				if invalidSpan(s) == "" && (ss.Scope().Name() != metadata.ScopeName || s.Name() != decisionSpanName) {
					n++
				}
			}
		}
	}
	return n
}

// splitResources puts the first n resource spans of td in one batch and
// the rest in another.
func splitResources(td ptrace.Traces, n int) (ptrace.Traces, ptrace.Traces) {
	a, b := ptrace.NewTraces(), ptrace.NewTraces()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		dst := b
		if i < n {
			dst = a
		}
		td.ResourceSpans().At(i).CopyTo(dst.ResourceSpans().AppendEmpty())
	}
	return a, b
}
