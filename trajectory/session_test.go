package trajectory

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestTopSpanIDs(t *testing.T) {
	// Root lost: the orphans whose parent is missing stand in for it; a
	// span parented to itself and a looping pair have a parent here.
	s := newSynth("svc")
	s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	s.span(3, 1, "execute_tool t", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
	s.span(4, 3, "GET", nil)
	s.span(5, 5, "self", nil)
	s.span(6, 7, "loop a", nil)
	s.span(7, 6, "loop b", nil)
	runs := Build(s.td)
	require.Len(t, runs, 1)
	assert.False(t, runs[0].RootFound)
	assert.ElementsMatch(t, []pcommon.SpanID{sid(2), sid(3)}, runs[0].TopSpanIDs)

	s = newSynth("svc")
	s.span(1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent"})
	s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	s.span(9, 8, "orphan", nil)
	runs = Build(s.td)
	require.Len(t, runs, 1)
	assert.ElementsMatch(t, []pcommon.SpanID{sid(1), sid(9)}, runs[0].TopSpanIDs, "the root and the orphan that joined its run")
}

func TestSessionKeys(t *testing.T) {
	build := func(keys ...string) Run {
		s := newSynth("svc")
		s.td.ResourceSpans().At(0).Resource().Attributes().PutStr("tenant.session", "from-resource")
		s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat", "app.session": "from-child", "session.id": "child-session"})
		s.span(1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent", "session.id": "root-session", "app.session": ""})
		runs := Build(s.td, WithSessionKeys(keys...))
		require.Len(t, runs, 1)
		return runs[0]
	}
	assert.Equal(t, "root-session", build("session.id").SessionKey, "the root first")
	assert.Equal(t, "from-child", build("app.session", "session.id").SessionKey, "keys in order; an empty value does not count")
	assert.Equal(t, "from-resource", build("tenant.session").SessionKey, "then the resource")
	assert.Equal(t, "", build("nope").SessionKey)
	assert.Equal(t, "", build().SessionKey, "without the option")

	// Root lost: the run's first span's resource.
	s := newSynth("svc")
	s.td.ResourceSpans().At(0).Resource().Attributes().PutInt("tenant.session", 42)
	s.span(2, 1, "chat", map[string]any{"gen_ai.operation.name": "chat"})
	runs := Build(s.td, WithSessionKeys("tenant.session"))
	require.Len(t, runs, 1)
	assert.Equal(t, "42", runs[0].SessionKey, "non-string values through their string form")
}

// Session keys given by several options add up, and the caller's keys,
// which Build reads without copying them, are not written.
func TestSessionKeysAddUp(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "invoke_agent a", map[string]any{"gen_ai.operation.name": "invoke_agent", "app.session": "s-2"})
	keys := make([]string, 1, 4) // room an append would write into
	keys[0] = "nope"
	runs := Build(s.td, WithSessionKeys(keys...), WithSessionKeys("app.session"))
	require.Len(t, runs, 1)
	assert.Equal(t, "s-2", runs[0].SessionKey, "the second option's key")
	assert.Equal(t, []string{"nope", ""}, keys[:2], "the first option's keys written")
}

func TestWithIndex(t *testing.T) {
	s := newSynth("svc")
	s.span(1, 0, "root", nil)
	s.span(2, 1, "a", nil)
	s.span(2, 1, "duplicate", nil)
	var idx SpanIndex
	Build(s.td, WithIndex(&idx))
	require.Len(t, idx.Spans(), 3, "every span, duplicates too")
	assert.Equal(t, "duplicate", idx.Spans()[2].Span.Name())
	assert.Equal(t, "svc", attrStr(anyAttrs(idx.Spans()[0].Resource.Resource().Attributes()), "service.name"))
	assert.Equal(t, "test", idx.Spans()[1].Scope.Scope().Name())
	Build(s.td, WithIndex(&idx))
	assert.Len(t, idx.Spans(), 3, "reset by each Build")
}

// readSpanNames, one pass over a span's attributes, reads what firstStr
// reads key by key for each list: on every capture span and resource, and
// on attributes that repeat a key (Map.Get finds the first occurrence),
// set it empty or to a non-string value.
func TestSpanNamesMatchFirstStr(t *testing.T) {
	check := func(where string, m pcommon.Map) {
		t.Helper()
		want := spanNames{agent: firstStr(spanAttrs(m), agentKeys...), weakAgent: firstStr(spanAttrs(m), weakAgentKeys...), session: firstStr(spanAttrs(m), sessionKeys...)}
		if got := readSpanNames(spanAttrs(m)); got != want {
			t.Fatalf("%s: %+v, firstStr gives %+v", where, got, want)
		}
		if got := readSpanNames(anyAttrs(m)); got != want {
			t.Fatalf("%s without signature: %+v, firstStr gives %+v", where, got, want)
		}
	}
	named := 0
	for _, f := range traceCaptures(t) {
		td := loadFixture(t, f)
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			check(f+" resource", td.ResourceSpans().At(i).Resource().Attributes())
		}
		ForEachSpan(td, func(sp ptrace.Span) {
			check(f+" "+sp.Name(), sp.Attributes())
			if readSpanNames(spanAttrs(sp.Attributes())) != (spanNames{}) {
				named++
			}
		})
	}
	if named == 0 {
		t.Fatal("no capture span names an agent or a session")
	}
	const repeated = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000000","spanId":"0100000000000000","name":"s",
	"attributes":[
	{"key":"session.id","value":{"stringValue":""}},
	{"key":"session.id","value":{"stringValue":"second"}},
	{"key":"thread.id","value":{"intValue":"42"}},
	{"key":"gen_ai.agent.name","value":{"stringValue":"first"}},
	{"key":"gen_ai.agent.name","value":{"stringValue":"again"}},
	{"key":"agent.name","value":{"stringValue":""}},
	{"key":"gen_ai.agent.id","value":{"boolValue":true}},
	{"key":"ai.telemetry.functionId","value":{"stringValue":""}}]}]}]}]}`
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(repeated))
	if err != nil {
		t.Fatal(err)
	}
	m := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	check("repeated keys", m)
	if got := readSpanNames(spanAttrs(m)); got != (spanNames{agent: "first", weakAgent: "true", session: "42"}) {
		t.Fatalf("repeated keys: %+v", got)
	}
}

// The metadata memo answers what reading each text answers, for the texts
// of every capture's spans in order, and for each text again after another.
func TestMetadataMemoReadsAsMetadataOf(t *testing.T) {
	var texts []string
	for _, f := range traceCaptures(t) {
		td := loadFixture(t, f)
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				sps := sss.At(j).Spans()
				for k := 0; k < sps.Len(); k++ {
					texts = append(texts, attrStr(spanAttrs(sps.At(k).Attributes()), "metadata"))
				}
			}
		}
	}
	var m metadataMemo
	read := 0
	check := func(s string) {
		md, ok := m.of(s)
		if wmd, wok := metadataOf(s); md != wmd || ok != wok {
			t.Fatalf("%.80q: memo %+v %v, read %+v %v", s, md, ok, wmd, wok)
		}
		if ok {
			read++
		}
	}
	for i, s := range texts {
		check(s)
		if i > 0 {
			check(texts[i-1])
			check(s)
		}
	}
	if read == 0 {
		t.Fatal("no capture span has metadata that reads")
	}
}

// FuzzMetadataMayName holds metadataMayName to decoding: a text it rules
// out decodes to no agent name (agent) and no session field (session).
func FuzzMetadataMayName(f *testing.F) {
	seeds := []string{
		`{"lc_agent_name":"a","session_id":"s"}`, `{"LC_Agent_Name":"a"}`, `{"thread_id":"t","x_id":1}`,
		`{"ſession_id":"s"}`, `{"conversation_ID":"c"}`, `{"a_b":"session_id"}`, `{"\u0073ession_id":"s"}`,
		`{"langgraph_step":1,"checkpoint_ns":"x"}`, `{"thread_idx":"t"}`, `{"THREAD_iD":"t"}`, `{"thread\u005fid":"t"}`, `{"_":"_"}`, `_session_id`,
	}
	fuzzStrings(f, seeds, func(t *testing.T, s string) {
		md, ok := metadataOf(s)
		for _, agent := range []bool{false, true} {
			for _, session := range []bool{false, true} {
				if metadataMayName(s, agent, session) || !ok {
					continue
				}
				if agent && md.AgentName != "" || session && (md.SessionID != "" || md.ConversationID != "" || md.ThreadID != "") {
					t.Fatalf("%q ruled out (agent %v, session %v) but decodes to %+v", s, agent, session, md)
				}
			}
		}
	})
}

// FuzzHasFoldID holds hasFoldID to a search of the four letter cases.
func FuzzHasFoldID(f *testing.F) {
	seeds := []string{"", "_id", "x_iD", "_I", "__id", "abcdefg_id", "abcdefgh_ID", "_______i_d", "a_b_c_d_e_f_g_h_i_Id"}
	fuzzStrings(f, seeds, func(t *testing.T, s string) {
		want := strings.Contains(s, "_id") || strings.Contains(s, "_ID") || strings.Contains(s, "_Id") || strings.Contains(s, "_iD")
		if got := hasFoldID(s); got != want {
			t.Fatalf("hasFoldID(%q) = %v, want %v", s, got, want)
		}
	})
}
