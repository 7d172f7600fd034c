package triageconnector

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/connector/triageconnector/internal/metadata"
	"github.com/triage-otel/triage/recovery"
)

// benchBatch is 100 runs (a third failed with a decision), each with a root,
// an incident and two plain spans.
func benchBatch(b *testing.B, offset uint64) []spanDef {
	var spans []spanDef
	for i := uint64(0); i < 100; i++ {
		tr := offset + i
		switch i % 3 {
		case 0:
			spans = append(spans, failedRoot(b, tr, 1, "external_fault", recovery.ActionRetry, fmt.Sprintf("agent-%d", i%7), "lookup"))
		case 1:
			spans = append(spans, okRoot(tr, 1, "ok", 0))
		default:
			spans = append(spans, okRoot(tr, 1, "recovered", 0))
		}
		spans = append(spans, incident(tr, 2, 1, "external_fault", i%3 != 0), plain(tr, 3, 1), plain(tr, 4, 1))
	}
	return spans
}

func BenchmarkMetricsConsumeTraces(b *testing.B) {
	c, err := newMetricsConnector(connectortest.NewNopSettings(metadata.Type), defaultConfig(), consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	td := batch(svc("bench", benchBatch(b, 0)...))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Forget the decisions so every iteration counts every run.
		c.seen.lru.Purge()
		if err := c.ConsumeTraces(context.Background(), td); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = c.Shutdown(context.Background())
}

func BenchmarkLogsConsumeTraces(b *testing.B) {
	cfg := defaultConfig()
	c, err := newLogsConnector(connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	// Distinct batches so the duplicate filter does not short-cut the work.
	batches := make([]ptrace.Traces, 64)
	for i := range batches {
		batches[i] = batch(svc("bench", benchBatch(b, uint64(i)*1000)...))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(batches) == 0 {
			c.seen.lru.Purge()
		}
		if err := c.ConsumeTraces(context.Background(), batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = c.Shutdown(context.Background())
}
