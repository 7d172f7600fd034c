package guard

import (
	"fmt"
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

// BenchmarkRunAdd feeds a run of n turns (a model call, then a tool call
// with distinct arguments: nothing trips) in batches of 20 spans, as an
// exporter sends them. ns/span stays flat as n grows: each batch costs its
// own spans, never a re-read of what was fed before.
func BenchmarkRunAdd(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		s := newSynth()
		var spans []Span
		id := uint64(10)
		for i := range turns {
			spans = append(spans, s.llm(id, 1, 100, 10), s.tool(id+1, 1, "search", fmt.Sprintf(`{"q":"query %d"}`, i), false))
			id += 2
		}
		g, _ := mustGuards(b, DefaultConfig())
		b.Run(fmt.Sprintf("spans=%d", len(spans)), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				r := g.NewRun()
				for k := 0; k < len(spans); k += 20 {
					if trips := r.Add(spans[k:min(k+20, len(spans))]); len(trips) > 0 {
						b.Fatalf("tripped %v", names(trips))
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
		})
	}
}

// BenchmarkCaptures feeds every shared capture span by span (root last).
func BenchmarkCaptures(b *testing.B) {
	g, cls := mustGuards(b, DefaultConfig())
	caps := loadCaptures(b, cls)
	n := 0
	for _, c := range caps {
		n += len(c.spans)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, c := range caps {
			r := g.NewRun()
			for k := range c.spans {
				r.Add(c.spans[k : k+1])
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/span")
}

// BenchmarkCapturesFinal is what the final decision costs on the same
// captures (trajectory.Build and Classify of the whole trace, once), for
// comparison with BenchmarkCaptures.
func BenchmarkCapturesFinal(b *testing.B) {
	_, cls := mustGuards(b, DefaultConfig())
	caps := loadCaptures(b, cls)
	n := 0
	for _, c := range caps {
		n += len(c.spans)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, c := range caps {
			for _, run := range trajectory.Build(c.td) {
				cls.Classify(&run)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/span")
}
