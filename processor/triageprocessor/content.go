package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"

	"github.com/triage-otel/triage/trajectory"
)

// attrEvidenceContent says on a run root whether the run's spans carried
// message content (trajectory.Run.Content): "absent" marks a run
// classified blind, from structure, status and codes only.
const attrEvidenceContent = "triage.evidence.content"

// EvidenceConfig says what the processor writes about the evidence a
// decision rested on.
type EvidenceConfig struct {
	// AnnotateContent writes triage.evidence.content (present or absent) on
	// every run root, so dashboards can show how much traffic is
	// classified without message content (most GenAI instrumentations
	// record none by default).
	AnnotateContent bool `mapstructure:"annotate_content"`
}

// appendContentAnnotations appends the run-root annotations of the
// evidence settings; runs decided without content are counted whatever the
// setting.
func (p *triageProcessor) appendContentAnnotations(ctx context.Context, anns []annotation, run *trajectory.Run) []annotation {
	if run.Content == trajectory.ContentAbsent {
		p.tb.ProcessorTriageRunsWithoutContent.Add(ctx, 1)
	}
	if !p.cfg.Evidence.AnnotateContent || run.Content == "" {
		return anns
	}
	return append(anns, strAnn(attrEvidenceContent, string(run.Content)))
}
