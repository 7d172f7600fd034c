//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml

// Package triageprocessor is a traces processor that holds the spans of each
// trace until its agent run is complete, rebuilds the run's trajectory,
// classifies why it failed and forwards the spans annotated with the verdict.
package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"
