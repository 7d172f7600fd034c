// Package e2e holds the end-to-end test of the triage collector: it builds the
// collector with ocb from builder-config.yaml, starts it, replays the shared
// fixture captures over OTLP/HTTP and checks the annotated spans the collector
// writes against what `triage classify` says for the same files.
//
// The test is behind the `e2e` build tag because it builds binaries and runs a
// collector process: run it with `make e2e` (or
// `go test -tags e2e -count=1 ./e2e/...`).
package e2e
