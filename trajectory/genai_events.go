package trajectory

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// GenAI message events recorded as span events. Some SDKs (Azure AI
// Inference, Semantic Kernel, instrumentations written before log-based
// events) add the per-message GenAI events to the span itself instead of
// emitting log records: gen_ai.system/user/assistant/tool.message and
// gen_ai.choice span events, whose body is the JSON text of the
// gen_ai.event.content attribute, or, without it, the event's attributes
// themselves. They are read as the log events are (logs.go), and fill only
// what the span's attributes left empty.

// attrEventContent holds a span event's body.
const attrEventContent = "gen_ai.event.content"

// genaiMessageEvents completes an LLM step from its span's per-message
// GenAI events.
func genaiMessageEvents(c *spanCtx, st *Step) {
	evs := c.sp.Events()
	var se *spanEvents
	for i := 0; i < evs.Len(); i++ {
		e := evs.At(i)
		name := e.Name()
		if name == EventInferenceDetails || !IsGenAIEvent(name) {
			continue
		}
		if se == nil {
			se = &spanEvents{}
		}
		attrs := e.Attributes()
		body := pcommon.NewValueEmpty()
		if v, ok := attrs.Get(attrEventContent); ok {
			body = v
		} else if attrs.Len() > 0 {
			body = pcommon.NewValueMap()
			attrs.CopyTo(body.Map())
		}
		se.addEvent(name, attrs, body)
	}
	if se != nil {
		se.fill(c, st)
	}
}
