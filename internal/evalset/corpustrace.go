package evalset

import (
	"crypto/sha256"
	"path/filepath"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// corpusService is the service.name of traces made from corpus entries.
const corpusService = "triage-corpus"

// CorpusTrace turns a corpus entry into the trace an instrumented agent
// would emit for it: one invoke_agent span with status ERROR and an
// exception event, plus the HTTP status and JSON-RPC code attributes when
// the entry records them. Scoring the corpus through this trace keeps it on
// the same path as real captures (trajectory.Build then Classify).
//
// key makes the IDs distinct and stable (e.g. "corpus_a.json#3").
func CorpusTrace(e CorpusEntry, key string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", corpusService)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("github.com/triage-otel/triage/internal/evalset")

	sum := sha256.Sum256([]byte(key))
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	if tid.IsEmpty() {
		tid[0] = 1
	}
	if sid.IsEmpty() {
		sid[0] = 1
	}

	const start = 1_700_000_000_000_000_000
	span := ss.Spans().AppendEmpty()
	span.SetTraceID(tid)
	span.SetSpanID(sid)
	span.SetName("invoke_agent corpus")
	span.SetKind(ptrace.SpanKindInternal)
	span.SetStartTimestamp(pcommon.Timestamp(start))
	span.SetEndTimestamp(pcommon.Timestamp(start + 1_000_000_000))
	attrs := span.Attributes()
	attrs.PutStr("gen_ai.operation.name", "invoke_agent")
	attrs.PutStr("gen_ai.agent.name", "corpus")
	if e.HTTPStatus != 0 {
		attrs.PutInt("http.response.status_code", int64(e.HTTPStatus))
	}
	if e.JSONRPCCode != nil {
		attrs.PutInt("rpc.jsonrpc.error_code", int64(*e.JSONRPCCode))
	}
	span.Status().SetCode(ptrace.StatusCodeError)
	span.Status().SetMessage(e.Error)

	ev := span.Events().AppendEmpty()
	ev.SetName("exception")
	ev.SetTimestamp(pcommon.Timestamp(start + 1_000_000_000))
	if e.ExceptionType != "" {
		ev.Attributes().PutStr("exception.type", e.ExceptionType)
	}
	ev.Attributes().PutStr("exception.message", e.Error)
	return td
}

func corpusKey(file string, i int) string {
	return file + "#" + strconv.Itoa(i)
}

// CorpusTraceFor is the trace ScoreCorpus makes of entry i of the corpus
// at path.
func CorpusTraceFor(path string, i int, e CorpusEntry) ptrace.Traces {
	return CorpusTrace(e, corpusKey(filepath.Base(path), i))
}
