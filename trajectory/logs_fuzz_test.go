package trajectory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

var fuzzEventNames = []string{
	EventSystemMessage, EventUserMessage, EventAssistantMessage, EventToolMessage,
	EventChoice, EventInferenceDetails, "gen_ai.other", "",
}

// fuzzLogs builds log records from shape (two bytes each: event name and
// where it goes, span it names and body form) with value as the body or an
// attribute.
func fuzzLogs(shape []byte, value string) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	n := min(len(shape)/2, 64)
	for i := 0; i < n; i++ {
		b0, b1 := shape[2*i], shape[2*i+1]
		lr := lrs.AppendEmpty()
		lr.SetTraceID(pcommon.TraceID{b1 & 1})
		if b1&2 == 0 {
			lr.SetSpanID(sid(uint64(b1>>2)%24 + 1))
		}
		name := fuzzEventNames[int(b0)%len(fuzzEventNames)]
		if b0&0x80 != 0 {
			lr.SetEventName(name)
		} else {
			lr.Attributes().PutStr("event.name", name)
		}
		switch (b0 >> 4) & 3 {
		case 0:
			lr.Body().SetStr(value)
		case 1:
			var raw any
			if json.Unmarshal([]byte(value), &raw) == nil {
				_ = lr.Body().FromRaw(raw)
			}
		case 2:
			lr.Attributes().PutStr(fuzzKeys[int(b1)%len(fuzzKeys)], value)
		case 3:
			m := lr.Body().SetEmptyMap()
			m.PutStr("content", value)
			m.PutStr("id", value)
			m.PutEmptyMap("message").PutStr("content", value)
		}
	}
	return ld
}

func FuzzBuildLogs(f *testing.F) {
	// Seeds: the bodies of real log events.
	for _, name := range []string{"openai-otel/constraint_leak", "openai-edot/bad_args"} {
		data, err := os.ReadFile(filepath.Join(fixturesDir, name+".logs.json"))
		if err != nil {
			continue
		}
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(data)
		if err != nil {
			continue
		}
		i := 0
		ForEachLogRecord(ld, func(lr plog.LogRecord) {
			b := byte(i)
			f.Add([]byte{0, b, 1, b ^ 0x5a, 2, 1, 0, 2, 3}, []byte{0x10 | b%8, 4, 0x90 | (b+4)%8, 12}, lr.Body().AsString())
			i++
		})
	}
	f.Add([]byte{0, 1, 0, 1, 1, 0}, []byte{0x14, 4, 0x25, 8}, `[{"role":"tool","parts":[{"type":"tool_call_response","id":"c","response":{"isError":true}}]}]`)
	f.Add([]byte{0, 1, 0}, []byte{0x3, 0}, "\xff\xfe\x00")
	f.Fuzz(func(t *testing.T, spanShape, logShape []byte, value string) {
		td := fuzzTraces(spanShape, value)
		ld := fuzzLogs(logShape, value)
		before := ld.LogRecordCount()
		plain := Build(td)
		runs := Build(td, WithLogs(ld))
		if len(runs) != len(plain) {
			t.Fatalf("logs changed the runs: %d with, %d without", len(runs), len(plain))
		}
		for i := range runs {
			if len(runs[i].Steps) != len(plain[i].Steps) || len(runs[i].SpanIDs) != len(plain[i].SpanIDs) {
				t.Fatalf("run %d: logs changed the steps or spans", i)
			}
		}
		if ld.LogRecordCount() != before {
			t.Fatal("Build changed the log records")
		}
	})
}
