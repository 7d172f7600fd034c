package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Reasons of processor_triage_spans_invalid.
const (
	invalidNoTraceID = "trace_id"
	invalidNoSpanID  = "span_id"
)

// invalidSpan returns why a span cannot be held ("" when it can): OTLP
// requires a trace ID and a span ID, and all-zero ones would merge
// unrelated spans into one trace.
func invalidSpan(span ptrace.Span) string {
	switch {
	case span.TraceID().IsEmpty():
		return invalidNoTraceID
	case span.SpanID().IsEmpty():
		return invalidNoSpanID
	}
	return ""
}

// rejectInvalid counts and logs the spans of a batch that were dropped as
// invalid. They are not forwarded: without a trace ID a span belongs to no
// trace (all-zero IDs would merge unrelated spans into one), and OTLP
// requires both IDs. No error is returned, as contrib's processors do for
// malformed data: the batch's valid spans were accepted, and the sender
// could not fix the others by retrying.
func (p *triageProcessor) rejectInvalid(ctx context.Context, invalid map[string]int64) {
	if len(invalid) == 0 {
		return
	}
	var total int64
	parts := make([]string, 0, len(invalid))
	for reason, n := range invalid {
		p.tb.ProcessorTriageSpansInvalid.Add(ctx, n, adds1("reason", reason)...)
		total += n
		parts = append(parts, fmt.Sprintf("%d without a %s", n, strings.ReplaceAll(reason, "_", " ")))
	}
	sort.Strings(parts)
	p.warnInvalid.Log(p.logger, total, zap.String("last_batch", strings.Join(parts, ", ")))
}

// forward hands decided spans to the next consumer. Its error is never
// returned to the sender: the spans of a batch are held and forwarded
// later, mixed with spans of other batches, and the next consumer is
// usually a fan-out (exporters, the triage connector) where one member's
// refusal comes after the others have taken the data. A retryable error
// would make the sender resend spans that were already delivered, which is
// how duplicates are made. The refusal is counted and logged instead; the
// decision path (connector, exporters) retries on its own.
func (p *triageProcessor) forward(ctx context.Context, td ptrace.Traces) {
	n := td.SpanCount()
	if err := p.next.ConsumeTraces(ctx, td); err != nil {
		p.tb.ProcessorTriageSpansForwardFailed.Add(ctx, int64(n))
		p.warnForward.Log(p.logger, int64(n),
			zap.String("hint", "a consumer after the triage processor refused spans; the triage connector retries decisions itself, so this is an exporter of the traces pipeline (queue full or rejected data)"),
			zap.Error(err))
	}
}
