package evalset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// LogsSuffix ends the name of the file that holds a capture's log events
// (NAME.logs.json beside NAME.json).
const LogsSuffix = ".logs.json"

// LogsFileFor returns the log-events file beside a capture (NAME.logs.json
// for NAME.json), or "" when there is none or path is itself a logs file.
func LogsFileFor(path string) string {
	if strings.HasSuffix(path, LogsSuffix) || !strings.HasSuffix(path, ".json") {
		return ""
	}
	cand := strings.TrimSuffix(path, ".json") + LogsSuffix
	if st, err := os.Stat(cand); err == nil && !st.IsDir() {
		return cand
	}
	return ""
}

// ReadLogs reads an OTLP/JSON ExportLogsServiceRequest file (one request, or
// several in a row as the collector's file exporter writes them). Errors
// name the file.
func ReadLogs(path string) (plog.Logs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return plog.Logs{}, err
	}
	return ParseLogs(path, data)
}

// ParseLogs parses OTLP/JSON logs; name is used in errors. Like ParseTraces,
// several requests in a row are merged.
func ParseLogs(name string, data []byte) (plog.Logs, error) {
	var um plog.JSONUnmarshaler
	return parseRequests(name, data, "log", um.UnmarshalLogs, func(dst, src plog.Logs) {
		src.ResourceLogs().MoveAndAppendTo(dst.ResourceLogs())
	})
}

// ParseTraces parses OTLP/JSON; name is used in errors. The data may hold
// one ExportTraceServiceRequest (a capture) or several in a row, one per
// line as the collector's file exporter writes them; their spans are merged,
// since the batches of one trace may be split across them.
func ParseTraces(name string, data []byte) (ptrace.Traces, error) {
	var um ptrace.JSONUnmarshaler
	return parseRequests(name, data, "trace", um.UnmarshalTraces, func(dst, src ptrace.Traces) {
		src.ResourceSpans().MoveAndAppendTo(dst.ResourceSpans())
	})
}

// parseRequests decodes one or more OTLP/JSON export requests in a row and
// merges them into the first.
func parseRequests[T any](name string, data []byte, signal string, unmarshal func([]byte) (T, error), merge func(dst, src T)) (T, error) {
	var merged, zero T
	dec := json.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			if n == 1 {
				return zero, fmt.Errorf("%s: empty, not an OTLP/JSON %s export", name, signal)
			}
			return merged, nil
		}
		if err != nil {
			return zero, requestError(name, signal, n, data, start, err)
		}
		v, err := unmarshal(raw)
		if err != nil {
			return zero, requestError(name, signal, n, data, start+leadingSpace(data[start:]), err)
		}
		if n == 1 {
			merged = v
			continue
		}
		merge(merged, v)
	}
}

// CaptureOptions are the Build options eval uses for a capture (its log
// events, when stored beside it).
func CaptureOptions(path string) ([]trajectory.Option, error) { return captureLogs(path) }

// captureLogs returns the Build option joining the log events stored beside
// a capture (NAME.logs.json), if there are any.
func captureLogs(path string) ([]trajectory.Option, error) {
	lf := LogsFileFor(path)
	if lf == "" {
		return nil, nil
	}
	ld, err := ReadLogs(lf)
	if err != nil {
		return nil, err
	}
	return []trajectory.Option{trajectory.WithLogs(ld)}, nil
}
