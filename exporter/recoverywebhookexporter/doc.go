//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml

// Package recoverywebhookexporter delivers triage recovery decisions to an
// HTTP webhook, one signed POST per decision (Standard Webhooks convention).
package recoverywebhookexporter // import "github.com/triage-otel/triage/exporter/recoverywebhookexporter"
