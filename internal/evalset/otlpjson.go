package evalset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ParseTracesPartial parses OTLP/JSON like ParseTraces, but a request that
// cannot be read loses only itself: the spans of the others are returned
// with one error per bad request. Invalid JSON stops a JSON decoder, so
// after it the rest of the data is read line by line, the way the
// collector's file exporter writes requests (one per line). Errors name
// the file, the request and its line, and say what is wrong without the
// JSON libraries' internals.
func ParseTracesPartial(name string, data []byte) (ptrace.Traces, []error) {
	td := ptrace.NewTraces()
	var errs []error
	var um ptrace.JSONUnmarshaler
	add := func(raw []byte, n int, start int64) {
		v, err := um.UnmarshalTraces(raw)
		if err != nil {
			errs = append(errs, requestError(name, "trace", n, data, start, err))
			return
		}
		v.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		n++
		if err != nil {
			errs = append(errs, parseLines(name, data, start, n, add)...)
			break
		}
		add(raw, n, start+leadingSpace(data[start:]))
	}
	if n == 0 {
		return td, []error{fmt.Errorf("%s: empty, not an OTLP/JSON trace export", name)}
	}
	return td, errs
}

// parseLines reads data from offset start one line at a time, each line a
// request numbered from n. When no line is a JSON value (a broken document
// spread over lines) one error reports the whole rest.
func parseLines(name string, data []byte, start int64, n int, add func([]byte, int, int64)) []error {
	var errs []error
	good := 0
	off := start
	for _, line := range bytes.SplitAfter(data[start:], []byte("\n")) {
		lineStart := off
		off += int64(len(line))
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		if !json.Valid(trimmed) {
			var v any
			errs = append(errs, requestError(name, "trace", n, data, lineStart, jsonError(trimmed, &v)))
			n++
			continue
		}
		good++
		add(trimmed, n, lineStart+leadingSpace(line))
		n++
	}
	if good == 0 {
		var v any
		return []error{requestError(name, "trace", n-len(errs), data, start, jsonError(data[start:], &v))}
	}
	return errs
}

// jsonError is the error encoding/json gives for data.
func jsonError(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return errors.New("not a JSON value")
}

func leadingSpace(b []byte) int64 {
	return int64(len(b) - len(bytes.TrimLeft(b, " \t\r\n")))
}

// requestError describes why request n, starting at byte start of data,
// could not be read.
func requestError(name, signal string, n int, data []byte, start int64, err error) error {
	msg, at := describeDecodeError(err)
	pos := start
	if at >= 0 {
		pos += at
	}
	line, col := lineColumn(data, pos)
	where := fmt.Sprintf("line %d", line)
	if at >= 0 {
		where += fmt.Sprintf(", column %d", col)
	}
	return fmt.Errorf("%s: request %d (%s): not an OTLP/JSON %s export: %s", name, n, where, signal, msg)
}

// jsoniterError matches pdata's JSON errors: "Func: message, error found
// in #N byte of ...|context|..., bigger context ...|...|...".
var jsoniterError = regexp.MustCompile(`^(?:[\w.]+: )?(?:([\w.]+): )?(.*?), error found in #(\d+) byte of \.\.\.\|(.*?)\|\.\.\.`)

// describeDecodeError words a decoding error for users and returns the
// offset it points at within the request (-1 when unknown).
func describeDecodeError(err error) (string, int64) {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return syn.Error(), syn.Offset - 1
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the data ends in the middle of a JSON value (truncated?)", -1
	}
	s := err.Error()
	m := jsoniterError.FindStringSubmatch(s)
	if m == nil {
		return s, -1
	}
	// (m[3], the "#N byte", counts within a buffer of pdata's decoder, not
	// within the request: the context quoted says where instead.)
	fn, msg, context := m[1], m[2], strings.TrimSpace(m[4])
	switch {
	case strings.Contains(fn, "UnmarshalJSON") || strings.Contains(s, "ID.") || strings.Contains(msg, "length mismatch"):
		msg = "a trace ID or span ID is not hexadecimal of the right length (32 digits for a trace ID, 16 for a span ID)"
	case strings.Contains(msg, "but found"):
		want, found, _ := strings.Cut(strings.TrimPrefix(msg, "expect "), ", but found ")
		switch {
		case strings.Contains(want, "["):
			want = "a JSON array"
		case strings.Contains(want, "{"):
			want = "a JSON object"
		}
		msg = fmt.Sprintf("unexpected JSON structure: expected %s, found %s", want, found)
	}
	if context != "" {
		msg += " (near …" + context + "…)"
	}
	return msg, -1
}

// lineColumn returns the 1-based line and column of byte offset off.
func lineColumn(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
