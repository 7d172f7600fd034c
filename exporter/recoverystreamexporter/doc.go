//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml

// Package recoverystreamexporter appends triage recovery decisions to a Redis
// Stream (XADD with approximate MAXLEN trimming), for agent runtimes that
// consume decisions from a queue.
package recoverystreamexporter // import "github.com/triage-otel/triage/exporter/recoverystreamexporter"
