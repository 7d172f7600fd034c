package bench

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// captureTraces returns one ptrace.Traces per capture, in file order.
func captureTraces(b *testing.B) ([]ptrace.Traces, int) {
	caps := loadCaptures(b)
	out := make([]ptrace.Traces, 0, caps.Len())
	spans := 0
	for _, t := range caps.templates {
		for _, td := range t.requests {
			out = append(out, td)
			spans += td.SpanCount()
		}
	}
	return out, spans
}

// BenchmarkBuildCaptures is trajectory.Build over every shared capture
// (one op = one pass over all of them).
func BenchmarkBuildCaptures(b *testing.B) {
	tds, spans := captureTraces(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, td := range tds {
			if len(trajectory.Build(td)) == 0 {
				b.Fatal("no runs")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
}

// BenchmarkClassifyCaptures is Classify over the runs Build returns for
// every shared capture, built once outside the loop.
func BenchmarkClassifyCaptures(b *testing.B) {
	tds, spans := captureTraces(b)
	c, err := classifier.New(classifier.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var runs []trajectory.Run
	for _, td := range tds {
		runs = append(runs, trajectory.Build(td)...)
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range runs {
			_ = c.Classify(&runs[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
}

// BenchmarkBuildClassifyCaptures is both, as the processor runs them.
func BenchmarkBuildClassifyCaptures(b *testing.B) {
	tds, spans := captureTraces(b)
	c, err := classifier.New(classifier.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, td := range tds {
			runs := trajectory.Build(td)
			for i := range runs {
				_ = c.Classify(&runs[i])
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
}
