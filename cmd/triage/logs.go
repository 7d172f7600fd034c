package main

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/trajectory"
)

// GenAI log events beside the captures: a capture NAME.json may have its
// instrumentation's log events (message content) in NAME.logs.json. classify
// joins them to the spans (and the files of --logs to every FILE); replay
// sends them to /v1/logs with the capture.

// companionListed returns the capture that file is the log events of
// (NAME.json for NAME.logs.json) when that capture is also among files, so
// the logs are read or sent with it and not on their own.
func companionListed(file string, files []string) string {
	if !strings.HasSuffix(file, evalset.LogsSuffix) {
		return ""
	}
	capture := strings.TrimSuffix(file, evalset.LogsSuffix) + ".json"
	if slices.Contains(files, capture) {
		return capture
	}
	return ""
}

// readLogFiles reads the --logs files.
func readLogFiles(paths []string) ([]plog.Logs, error) {
	out := make([]plog.Logs, 0, len(paths))
	for _, p := range paths {
		ld, err := evalset.ReadLogs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, ld)
	}
	return out, nil
}

// logsOptions returns the Build options joining the log events of a trace
// file: its NAME.logs.json, if any, and the --logs files (extra). records
// counts the log records given.
func logsOptions(file string, extra []plog.Logs) (opts []trajectory.Option, records int, err error) {
	if lf := evalset.LogsFileFor(file); lf != "" {
		ld, err := evalset.ReadLogs(lf)
		if err != nil {
			return nil, 0, err
		}
		opts = append(opts, trajectory.WithLogs(ld))
		records += ld.LogRecordCount()
	}
	for _, ld := range extra {
		opts = append(opts, trajectory.WithLogs(ld))
		records += ld.LogRecordCount()
	}
	return opts, records, nil
}

// freshID maps a trace ID to its fresh random replacement, drawing one the
// first time; the empty ID stays empty.
func freshID(ids map[pcommon.TraceID]pcommon.TraceID, old pcommon.TraceID) (pcommon.TraceID, error) {
	if old.IsEmpty() {
		return old, nil
	}
	if n, ok := ids[old]; ok {
		return n, nil
	}
	var n pcommon.TraceID
	if _, err := rand.Read(n[:]); err != nil {
		return old, err
	}
	ids[old] = n
	return n, nil
}

// sendLogs POSTs log records to <endpoint>/v1/logs. With --fresh-ids their
// trace IDs take the capture's new IDs (ids), so they still name its spans.
func (r replayer) sendLogs(file string, ld plog.Logs, ids map[pcommon.TraceID]pcommon.TraceID, sent []sentFile) ([]sentFile, error) {
	if r.fresh {
		var rerr error
		trajectory.ForEachLogRecord(ld, func(lr plog.LogRecord) {
			n, err := freshID(ids, lr.TraceID())
			if err != nil {
				rerr = err
			}
			lr.SetTraceID(n)
		})
		if rerr != nil {
			return sent, fmt.Errorf("%s: %w", file, rerr)
		}
	}
	var m plog.JSONMarshaler
	body, err := m.MarshalLogs(ld)
	if err != nil {
		return sent, fmt.Errorf("%s: %w", file, err)
	}
	url := r.base + "/v1/logs"
	if err := r.post(file, url, body, "rejectedLogRecords", "log records"); err != nil {
		return sent, err
	}
	return append(sent, sentFile{file, fmt.Sprintf("%d log records to %s", ld.LogRecordCount(), url)}), nil
}
