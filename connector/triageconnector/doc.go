//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml

// Package triageconnector turns traces annotated by the triage processor into
// recovery decision log records (traces to logs) and bounded-cardinality
// failure metrics (traces to metrics).
package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"
