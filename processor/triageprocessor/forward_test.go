package triageprocessor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
)

func TestSpansWithoutIDsAreDroppedAndCounted(t *testing.T) {
	h := newHarness(t, nil)
	td := agentTrace(pcommon.NewTraceIDEmpty(), "svc", spanSpec{id: 1, name: "no trace id"})
	noSpanID := agentTrace(traceID(30), "svc", spanSpec{id: 1, name: "no span id"})
	noSpanID.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetSpanID(pcommon.NewSpanIDEmpty())
	noSpanID.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	valid := agentTrace(traceID(31), "svc", genaiRun("")...)
	valid.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())

	h.send(td) // no error: the valid spans were accepted
	assert.Equal(t, 4, h.sink.SpanCount(), "the valid run is decided and forwarded, the invalid spans are not")
	assert.Equal(t, int64(1), sumValue(t, h, "spans_invalid", attribute.String("reason", "trace_id")))
	assert.Equal(t, int64(1), sumValue(t, h, "spans_invalid", attribute.String("reason", "span_id")))
	assert.Equal(t, 0, h.p.held.Len(), "no all-zero trace is held")
}

// failingNext refuses every batch after counting its spans, like a fan-out
// whose other members took the data before one refused it.
type failingNext struct {
	consumertest.TracesSink
	err error
}

func (f *failingNext) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	_ = f.TracesSink.ConsumeTraces(ctx, td)
	return f.err
}

func (*failingNext) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// A refusal downstream is never returned to the sender: it would resend
// spans already delivered. Here a client that retries on error would
// duplicate every span.
func TestDownstreamRefusalIsNotReturnedToTheSender(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	core, logs := observer.New(zap.WarnLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	next := &failingNext{err: errors.New("sending queue is full")}
	cfg := createDefaultConfig().(*Config)
	p, err := newTriageProcessor(set, cfg, next)
	require.NoError(t, err)
	h := &harness{t: t, p: p, tel: tel}

	var sent atomic.Int64
	for i := range 3 {
		td := agentTrace(traceID(uint64(60+i)), "svc", genaiRun("upstream returned 502 Bad Gateway")...)
		sent.Add(int64(td.SpanCount()))
		// A retrying client resends on any error; nil means accepted.
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
	}
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, int(sent.Load()), next.SpanCount(), "each span offered downstream exactly once")
	assert.Equal(t, sent.Load(), sumValue(t, h, "spans_forward_failed"))
	require.NotZero(t, logs.FilterMessageSnippet("refused decided spans").Len(), "the refusal is logged")
	assert.Equal(t, 1, logs.FilterMessageSnippet("refused decided spans").Len(), "once per interval, not per batch")
}
