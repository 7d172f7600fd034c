package triageprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadatatest"
)

// withContent is genaiRun with the model's input messages recorded on the
// first chat span, as an instrumentation with content capture on does.
func withContent(spans []spanSpec) []spanSpec {
	out := append([]spanSpec(nil), spans...)
	attrs := map[string]any{"gen_ai.input.messages": `[{"role":"user","parts":[{"type":"text","content":"weather in Paris?"}]}]`}
	for k, v := range out[0].attrs {
		attrs[k] = v
	}
	out[0].attrs = attrs
	return out
}

func TestEvidenceContentAnnotation(t *testing.T) {
	for _, tt := range []struct {
		name     string
		annotate bool
		spans    []spanSpec
		want     string // "" = no attribute
	}{
		{"content absent", true, genaiRun(""), "absent"},
		{"content present", true, withContent(genaiRun("")), "present"},
		{"absent, failed run", true, genaiRun("upstream returned 502 Bad Gateway"), "absent"},
		{"setting off", false, genaiRun(""), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Evidence.AnnotateContent = tt.annotate })
			h.send(agentTrace(traceID(7), "svc", tt.spans...))
			require.Equal(t, len(tt.spans), h.sink.SpanCount())
			got, ok := strAttr(h.forwarded()[spanID(1)][0], attrEvidenceContent)
			if tt.want == "" {
				assert.False(t, ok, "%s written without the setting: %q", attrEvidenceContent, got)
			} else {
				assert.Equal(t, tt.want, got)
			}
			// Only the run root says it.
			_, onChild := strAttr(h.forwarded()[spanID(2)][0], attrEvidenceContent)
			assert.False(t, onChild)
		})
	}
}

// Runs decided without content are counted whether or not the root is
// annotated.
func TestRunsWithoutContentCounted(t *testing.T) {
	h := newHarness(t, nil)
	h.send(agentTrace(traceID(8), "svc", genaiRun("")...))
	h.send(agentTrace(traceID(9), "svc", withContent(genaiRun(""))...))
	h.send(agentTrace(traceID(10), "svc", genaiRun("upstream returned 502 Bad Gateway")...))
	metadatatest.AssertEqualProcessorTriageRunsWithoutContent(t, h.tel, []metricdata.DataPoint[int64]{{Value: 2}},
		metricdatatest.IgnoreTimestamp())
}
