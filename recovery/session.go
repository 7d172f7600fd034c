package recovery

import "go.opentelemetry.io/collector/pdata/pcommon"

// DefaultSessionAttributes are the attributes that carry a session or
// conversation id in the conventions triage reads, in order of preference.
var DefaultSessionAttributes = []string{
	"gen_ai.conversation.id",                      // OTel GenAI semconv
	"session.id",                                  // OTel general / OpenInference
	"ai.telemetry.metadata.sessionId",             // Vercel AI SDK metadata
	"ai.telemetry.metadata.conversationId",        //
	"traceloop.association.properties.session_id", // OpenLLMetry association properties
	"langfuse.session.id",
}

// SessionKey returns the value of the first of keys found with a non-empty
// value in maps (searched in order: e.g. the root span's attributes, then
// the other spans', then the resource's), or "" when none has one; the
// engine then uses the trace as the session.
func SessionKey(keys []string, maps ...pcommon.Map) string {
	for _, k := range keys {
		for _, m := range maps {
			if v, ok := m.Get(k); ok {
				if s := v.AsString(); s != "" {
					return s
				}
			}
		}
	}
	return ""
}
