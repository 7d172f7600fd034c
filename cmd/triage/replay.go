package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/trajectory"
)

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("replay", stderr)
	endpoint := fs.String("endpoint", "http://localhost:4318", "OTLP/HTTP endpoint (`URL`); traces go to <URL>/v1/traces, log events to <URL>/v1/logs")
	fresh := fs.Bool("fresh-ids", false, "give every trace new random IDs (consistent within a file and its .logs.json) so a capture can be replayed repeatedly")
	timeout := fs.Duration("timeout", 10*time.Second, "timeout of each request")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "triage replay: no FILE given")
		return exitUsage
	}
	r := replayer{client: &http.Client{Timeout: *timeout}, base: otlpBase(*endpoint), fresh: *fresh}
	code := exitOK
	for _, f := range files {
		if c := companionListed(f, files); c != "" {
			fmt.Fprintf(stderr, "triage replay: %s is sent with %s\n", f, c)
			continue
		}
		sent, err := r.replayFile(f)
		for _, s := range sent {
			fmt.Fprintf(stdout, "sent %s: %s\n", s.file, s.what)
		}
		if errors.Is(err, errNoSpans) {
			fmt.Fprintf(stderr, "triage replay: skipped %s: no spans or log records in it\n", f)
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "triage replay: %v\n", err)
			code = exitFailed
		}
	}
	return code
}

// errNoSpans is returned for a file that parses but holds neither spans nor
// log records.
var errNoSpans = errors.New("no spans")

// otlpBase strips a signal path (/v1/traces, /v1/logs) from the endpoint.
func otlpBase(endpoint string) string {
	endpoint = strings.TrimRight(endpoint, "/")
	for _, p := range []string{"/v1/traces", "/v1/logs"} {
		endpoint = strings.TrimSuffix(endpoint, p)
	}
	return endpoint
}

type replayer struct {
	client *http.Client
	base   string
	fresh  bool
}

// sentFile is one request a replay made.
type sentFile struct{ file, what string }

// replayFile sends one OTLP/JSON file: a trace capture (with the log events
// of its NAME.logs.json, sent first, as an SDK usually exports a call's
// events before the spans that end after it) or a logs file alone. Files
// are parsed first, so a bad file is reported as such and never sent.
func (r replayer) replayFile(file string) ([]sentFile, error) {
	td, err := evalset.ReadTraces(file)
	if err != nil {
		return nil, err
	}
	ids := map[pcommon.TraceID]pcommon.TraceID{}
	if td.SpanCount() == 0 {
		ld, lerr := evalset.ReadLogs(file)
		if lerr != nil || ld.LogRecordCount() == 0 {
			return nil, errNoSpans
		}
		return r.sendLogs(file, ld, ids, nil)
	}
	var ld plog.Logs
	lf := evalset.LogsFileFor(file)
	if lf != "" {
		if ld, err = evalset.ReadLogs(lf); err != nil {
			return nil, err
		}
	}
	if r.fresh {
		if err := freshTraceIDs(td, ids); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	var sent []sentFile
	if lf != "" && ld.LogRecordCount() > 0 {
		if sent, err = r.sendLogs(lf, ld, ids, sent); err != nil {
			return sent, err
		}
	}
	var m ptrace.JSONMarshaler
	body, err := m.MarshalTraces(td)
	if err != nil {
		return sent, fmt.Errorf("%s: %w", file, err)
	}
	url := r.base + "/v1/traces"
	if err := r.post(file, url, body, "rejectedSpans", "spans"); err != nil {
		return sent, err
	}
	return append(sent, sentFile{file, fmt.Sprintf("%d spans to %s", td.SpanCount(), url)}), nil
}

// post sends one OTLP/JSON request body; rejectedField names the partial
// success count of the signal.
func (r replayer) post(file, url string, body []byte, rejectedField, items string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	defer resp.Body.Close()
	respBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %s answered %s: %s", file, url, resp.Status, clip(string(respBody)))
	}
	// A 2xx can still report rejected items (OTLP partial success).
	if rejected, msg := partialSuccess(respBody, rejectedField); rejected > 0 {
		return fmt.Errorf("%s: %s rejected %d %s: %s", file, url, rejected, items, msg)
	}
	return nil
}

// freshTraceIDs replaces every trace ID with a random one, the same old ID
// always mapping to the same new one (recorded in ids, so the capture's log
// events follow), so the spans of a trace (and links between traces of the
// file) stay together.
func freshTraceIDs(td ptrace.Traces, ids map[pcommon.TraceID]pcommon.TraceID) error {
	var rerr error
	remap := func(old pcommon.TraceID) pcommon.TraceID {
		n, err := freshID(ids, old)
		if err != nil {
			rerr = err
		}
		return n
	}
	trajectory.ForEachSpan(td, func(span ptrace.Span) { span.SetTraceID(remap(span.TraceID())) })
	// Links into this file's traces follow them; links pointing outside
	// the capture keep their ID.
	trajectory.ForEachSpan(td, func(span ptrace.Span) {
		links := span.Links()
		for l := 0; l < links.Len(); l++ {
			if n, ok := ids[links.At(l).TraceID()]; ok {
				links.At(l).SetTraceID(n)
			}
		}
	})
	return rerr
}

// partialSuccess reads the rejected span count of an OTLP/JSON export
// response. The count is an int64, which OTLP/JSON may write as a string.
// A body that is not such a response reports nothing.
func partialSuccess(body []byte, rejectedField string) (int64, string) {
	var resp struct {
		PartialSuccess map[string]json.RawMessage `json:"partialSuccess"`
	}
	if json.Unmarshal(body, &resp) != nil || len(resp.PartialSuccess[rejectedField]) == 0 {
		return 0, ""
	}
	var msg string
	_ = json.Unmarshal(resp.PartialSuccess["errorMessage"], &msg)
	raw := strings.Trim(string(resp.PartialSuccess[rejectedField]), `"`)
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, ""
	}
	return n, msg
}
