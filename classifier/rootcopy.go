package classifier

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/triage-otel/triage/trajectory"
)

// errorsSeen maps an error message recorded on a span of the run to the
// latest end of a span that recorded it.
type errorsSeen map[string]pcommon.Timestamp

func (s errorsSeen) add(msg string, end pcommon.Timestamp) {
	if msg == "" {
		return
	}
	if e, ok := s[msg]; !ok || end > e {
		s[msg] = end
	}
}

// rootRepeatsAnsweredError reports whether the root span's error only
// repeats an error the run recorded earlier and then went past with a
// final answer. Some instrumentations set the root's status from the whole
// trace — ERROR with the first error any span had (OpenInference's span
// processor for the AI SDK does) — so a model call the SDK retried, or a
// tool error fed back to the model, leaves the root ERROR although the run
// finished. Such a root carries no evidence of its own (no exception event
// or error type, no HTTP status, no JSON-RPC code), its message is one an
// earlier span recorded, and the run's last step is a model answer (no
// tool request) that ended after every span with that message. The earlier
// spans' own incidents still decide the run: an unrecovered one fails it.
func (cl *classification) rootRepeatsAnsweredError(se *trajectory.SpanError, msg string, seen errorsSeen) bool {
	if msg == "" || msg != se.StatusMessage || len(se.Errors) > 0 || se.HTTPStatus != 0 || se.HasJSONRPC || se.JSONRPCCode != 0 {
		return false
	}
	end, ok := seen[msg]
	if !ok || len(cl.steps) == 0 {
		return false
	}
	last := &cl.steps[len(cl.steps)-1]
	return last.Kind == trajectory.StepLLM && !last.Failed() && !requestsTools(last) && last.End > end
}
