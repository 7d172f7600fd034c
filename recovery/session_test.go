package recovery

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestSessionKey(t *testing.T) {
	span, res := pcommon.NewMap(), pcommon.NewMap()
	if got := SessionKey(DefaultSessionAttributes, span, res); got != "" {
		t.Fatalf("no attribute: %q", got)
	}
	res.PutStr("session.id", "from-resource")
	span.PutStr("gen_ai.conversation.id", "")
	if got := SessionKey(DefaultSessionAttributes, span, res); got != "from-resource" {
		t.Fatalf("empty values are skipped: %q", got)
	}
	span.PutStr("gen_ai.conversation.id", "conv-1")
	if got := SessionKey(DefaultSessionAttributes, span, res); got != "conv-1" {
		t.Fatalf("preferred key first: %q", got)
	}
	span.PutInt("tenant.session", 42)
	if got := SessionKey([]string{"tenant.session"}, span); got != "42" {
		t.Fatalf("configured attribute, non-string value: %q", got)
	}
}
