package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/trajectory"
)

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("replay", stderr)
	endpoint := fs.String("endpoint", "http://localhost:4318", "OTLP/HTTP endpoint (`URL`); traces go to <URL>/v1/traces")
	fresh := fs.Bool("fresh-ids", false, "give every trace new random IDs (consistent within a file) so a capture can be replayed repeatedly")
	timeout := fs.Duration("timeout", 10*time.Second, "timeout of each request")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "triage replay: no FILE given")
		return exitUsage
	}
	url := tracesURL(*endpoint)
	client := &http.Client{Timeout: *timeout}
	code := exitOK
	for _, f := range files {
		n, err := replayFile(client, url, f, *fresh)
		if errors.Is(err, errNoSpans) {
			// E.g. a .logs.json beside the captures: nothing to send, not an error.
			fmt.Fprintf(stderr, "triage replay: skipped %s: no spans in it\n", f)
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "triage replay: %v\n", err)
			code = exitFailed
			continue
		}
		fmt.Fprintf(stdout, "sent %s: %d spans to %s\n", f, n, url)
	}
	return code
}

// errNoSpans is returned for a file that parses but holds no spans.
var errNoSpans = errors.New("no spans")

// tracesURL appends the OTLP/HTTP traces path unless the endpoint has it.
func tracesURL(endpoint string) string {
	endpoint = strings.TrimRight(endpoint, "/")
	if strings.HasSuffix(endpoint, "/v1/traces") {
		return endpoint
	}
	return endpoint + "/v1/traces"
}

// replayFile sends one OTLP/JSON file and returns the number of spans sent.
// The file is parsed first, so a bad file is reported as such and never
// sent.
func replayFile(client *http.Client, url, file string, fresh bool) (int, error) {
	td, err := evalset.ReadTraces(file)
	if err != nil {
		return 0, err
	}
	if td.SpanCount() == 0 {
		return 0, errNoSpans
	}
	if fresh {
		if err := freshTraceIDs(td); err != nil {
			return 0, fmt.Errorf("%s: %w", file, err)
		}
	}
	var m ptrace.JSONMarshaler
	body, err := m.MarshalTraces(td)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	defer resp.Body.Close()
	respBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, fmt.Errorf("%s: %s answered %s: %s", file, url, resp.Status, clip(string(respBody)))
	}
	// A 2xx can still report rejected spans (OTLP partial success).
	if rejected, msg := partialSuccess(respBody); rejected > 0 {
		return 0, fmt.Errorf("%s: %s rejected %d spans: %s", file, url, rejected, msg)
	}
	return td.SpanCount(), nil
}

// freshTraceIDs replaces every trace ID with a random one, the same old ID
// always mapping to the same new one, so the spans of a trace (and links
// between traces of the file) stay together.
func freshTraceIDs(td ptrace.Traces) error {
	ids := map[pcommon.TraceID]pcommon.TraceID{}
	var rerr error
	remap := func(old pcommon.TraceID) pcommon.TraceID {
		if old.IsEmpty() {
			return old
		}
		if n, ok := ids[old]; ok {
			return n
		}
		var n pcommon.TraceID
		if _, err := rand.Read(n[:]); err != nil {
			rerr = err
			return old
		}
		ids[old] = n
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
func partialSuccess(body []byte) (int64, string) {
	var resp struct {
		PartialSuccess struct {
			RejectedSpans json.RawMessage `json:"rejectedSpans"`
			ErrorMessage  string          `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	if json.Unmarshal(body, &resp) != nil || len(resp.PartialSuccess.RejectedSpans) == 0 {
		return 0, ""
	}
	raw := strings.Trim(string(resp.PartialSuccess.RejectedSpans), `"`)
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, ""
	}
	return n, resp.PartialSuccess.ErrorMessage
}
