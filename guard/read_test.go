package guard

import (
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// Read takes a span's session from the configured attributes (through the
// span reader's key signature) and its resource's service and session
// (once per run of spans that share the resource) as recovery.SessionKey
// and the resource's service.name read them span by span.
func TestReadSessionsAsSessionKey(t *testing.T) {
	keys := append([]string{"app.session", "app.num"}, recovery.DefaultSessionAttributes...)
	_, cls := mustGuards(t, DefaultConfig())
	g, err := New(DefaultConfig(), cls, keys)
	if err != nil {
		t.Fatal(err)
	}
	var batch []Span
	for _, c := range loadCaptures(t, cls) {
		batch = append(batch, c.spans...)
	}
	// Resources that take turns, values that are empty, repeated or not
	// strings.
	td := ptrace.NewTraces()
	var res [3]pcommon.Resource
	for i := range res {
		rs := td.ResourceSpans().AppendEmpty()
		res[i] = rs.Resource()
		rs.ScopeSpans().AppendEmpty()
	}
	res[0].Attributes().PutStr("service.name", "a")
	res[0].Attributes().PutStr("session.id", "res-a")
	res[1].Attributes().PutInt("service.name", 7)
	res[1].Attributes().PutInt("app.num", 42)
	res[2].Attributes().PutStr("app.session", "")
	res[2].Attributes().PutStr("langfuse.session.id", "res-c")
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i, attrs := range []map[string]any{
		{"app.session": "s1"},
		{"app.session": "", "session.id": "s2"},
		{"app.num": int64(5), "gen_ai.conversation.id": "conv"},
		{"gen_ai.conversation.id": "", "session.id": "s3", "app.num": 1.5},
		{"app.session": true},
		{},
	} {
		sp := spans.AppendEmpty()
		sp.SetSpanID(sid(uint64(i + 1)))
		for k, v := range attrs {
			switch x := v.(type) {
			case string:
				sp.Attributes().PutStr(k, x)
			case int64:
				sp.Attributes().PutInt(k, x)
			case float64:
				sp.Attributes().PutDouble(k, x)
			case bool:
				sp.Attributes().PutBool(k, x)
			}
		}
		for _, r := range []int{0, 1, 0, 2, 2, 1} {
			batch = append(batch, Span{Span: sp, Resource: res[r], Scope: "test"})
		}
	}
	reads := g.Read(batch)
	for i, s := range batch {
		rd := &reads[i]
		if want := recovery.SessionKey(keys, s.Span.Attributes()); rd.read.KeyedSession != want {
			t.Errorf("span %d %s: session %q, SessionKey %q", i, s.Span.SpanID(), rd.read.KeyedSession, want)
		}
		if want := recovery.SessionKey(keys, s.Resource.Attributes()); rd.resSession != want {
			t.Errorf("span %d %s: resource session %q, SessionKey %q", i, s.Span.SpanID(), rd.resSession, want)
		}
		want := ""
		if v, ok := s.Resource.Attributes().Get("service.name"); ok {
			want = v.AsString()
		}
		if rd.service != want {
			t.Errorf("span %d %s: service %q, want %q", i, s.Span.SpanID(), rd.service, want)
		}
	}
}

// A batch read in room given back by an earlier batch (Release) reads as
// it does in room of its own: nothing of the earlier reads is left.
func TestReadAfterRelease(t *testing.T) {
	_, cls := mustGuards(t, DefaultConfig())
	g, err := New(DefaultConfig(), cls, []string{"app.session"})
	if err != nil {
		t.Fatal(err)
	}
	var caps []Span
	for _, c := range loadCaptures(t, cls) {
		caps = append(caps, c.spans...)
	}
	s := newSynth()
	plain := []Span{s.span(1, 0, "plain", nil), s.span(2, 1, "other", map[string]any{"x": "y"})}
	for i := 0; i+readRoomLen <= len(caps); i += readRoomLen {
		g.Release(g.Read(caps[i : i+readRoomLen]))
		for j, rd := range g.Read(plain) {
			if rd.read.Role != trajectory.SpanOther || rd.read.KeyedSession != "" || rd.read.Session != "" || rd.read.Agent != "" ||
				len(rd.read.Tools) != 0 || !reflect.DeepEqual(rd.read.Step, trajectory.Step{}) || rd.resSession != "" || rd.service != "svc" ||
				rd.id != plain[j].Span.SpanID() || rd.parent != plain[j].Span.ParentSpanID() || rd.end != plain[j].Span.EndTimestamp() {
				t.Fatalf("span %d read after a release: %+v", j, rd)
			}
		}
	}
}
