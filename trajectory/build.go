package trajectory

import "go.opentelemetry.io/collector/pdata/ptrace"

// Build groups the spans of td by trace and agent run and returns one Run
// per agent invocation, with its steps in end-time order.
func Build(td ptrace.Traces) []Run {
	_ = td
	return nil // PLACEHOLDER: being implemented (issue 2)
}
