package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// outbound redacts what the processor itself publishes. There is one
// redactor (recovery.Redactor, configured by recovery.redaction) and each
// outbound string passes it exactly once, at the one place that writes it:
//
//   - the decision document: the recovery engine, given this redactor
//     (recovery.WithRedactor), owns its guarantee (session, names, reasons,
//     evidence, hints, targets), so the processor passes the run's raw
//     names in and the document's fields out untouched;
//   - everything else, here: the names written in triage.* attributes
//     (service, agent, tool; the connector takes its metric labels and log
//     attributes from them), rule errors, and the errors and panic values
//     quoted in log lines (an OTTL evaluation error or a Redis error can
//     quote span data).
//
// The redactor removes credentials (glued into other text or after "_"
// too), e-mail addresses and card numbers, and bounds the length
// (recovery.redaction.max_length).
type outbound struct {
	red *recovery.Redactor
}

// text is a user-controlled string made safe to publish.
func (o outbound) text(s string) string { return o.red.Text(s) }

// err is the log field of an error, its text redacted.
func (o outbound) err(err error) zap.Field {
	if err == nil {
		return zap.Skip()
	}
	return zap.String("error", o.red.Text(err.Error()))
}

// panicValue is the log field of a recovered panic's value.
func (o outbound) panicValue(v any) zap.Field {
	return zap.String("panic", o.red.Text(fmt.Sprint(v)))
}

// identityAnnotations name who ran a run, redacted: triage.service and
// triage.agent (the connector's metric labels come from these, not from the
// span's own attributes).
func (p *triageProcessor) identityAnnotations(run *trajectory.Run) []annotation {
	return p.appendIdentityAnnotations(nil, run)
}

// appendIdentityAnnotations appends identityAnnotations to anns.
func (p *triageProcessor) appendIdentityAnnotations(anns []annotation, run *trajectory.Run) []annotation {
	if run.Service != "" {
		anns = append(anns, strAnn(attrService, p.out.text(run.Service)))
	}
	if run.Agent != "" {
		anns = append(anns, strAnn(attrAgent, p.out.text(run.Agent)))
	}
	return anns
}
