package classifier

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/triage-otel/triage/trajectory"
)

func TestCheckCall(t *testing.T) {
	idx := indexOffered(offered)
	sc := &schemaCache{}
	cases := []struct {
		name, args string
		want       FailureType
		signal     Signal
	}{
		{"lookup", `{"city":"Paris"}`, "", ""},
		{"lookup", `{ "city" : "Paris" }`, "", ""},
		{"forecast", `{"city":"Paris"}`, WrongToolCalled, SignalManifest},
		{"lookup", `{"town":"Paris"}`, SchemaMismatch, SignalJSONSchema},
		{"lookup", `{"city":3}`, SchemaMismatch, SignalJSONSchema},
		{"lookup", `{"city":"Paris"`, SchemaMismatch, SignalJSONSchema},
		{"lookup", ``, SchemaMismatch, SignalJSONSchema}, // empty = {} misses "city"
		{"convert", `{"amount":"one hundred","to":"EUR"}`, SchemaMismatch, SignalJSONSchema},
		{"convert", `{"amount":100,"to":"Euro"}`, SchemaMismatch, SignalJSONSchema},
		{"convert", `{"amount":100,"to":"EUR"}`, "", ""},
		// double-encoded arguments are read as the inner object
		{"convert", `"{\"amount\":100,\"to\":\"EUR\"}"`, "", ""},
	}
	for _, tc := range cases {
		f, ok := sc.checkCall(&trajectory.ToolCall{Name: tc.name, Arguments: tc.args}, idx)
		if (tc.want == "") == ok || f.Type != tc.want || f.Signal != tc.signal {
			t.Errorf("%s(%s): got %+v %v, want %q/%q", tc.name, tc.args, f, ok, tc.want, tc.signal)
		}
	}
	// Each schema is compiled once.
	if len(sc.compiled) != 2 {
		t.Errorf("compiled %d schemas, want 2", len(sc.compiled))
	}
}

func TestCheckCallNoVerdictWithoutEvidence(t *testing.T) {
	sc := &schemaCache{}
	// No offered tools: nothing to compare with.
	if f, ok := sc.checkCall(&trajectory.ToolCall{Name: "anything", Arguments: `{}`}, nil); ok {
		t.Errorf("no manifest, got %+v", f)
	}
	bad := []json.RawMessage{
		json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/remote.json"}}}`),
		json.RawMessage(`{"type":"objekt"}`),
		json.RawMessage(`{"type":"object","properties":{"a":{"pattern":"(?<=x)"}}}`),
		json.RawMessage(`not json`),
		json.RawMessage(`true`),
		json.RawMessage(`{}`),
		json.RawMessage(`[1,2]`),
	}
	for _, s := range bad {
		idx := indexOffered([]trajectory.ToolDef{{Name: "t", Schema: s}})
		if f, ok := sc.checkCall(&trajectory.ToolCall{Name: "t", Arguments: `{"a":"b"}`}, idx); ok {
			t.Errorf("schema %s: got %+v, want no verdict", s, f)
		}
	}
}

func TestHostedToolsOpenTheManifest(t *testing.T) {
	sc := &schemaCache{}
	// A provider-hosted tool offered by type only: its call name is not
	// known, so an unlisted name is not evidence of a wrong tool.
	idx := indexOffered(append([]trajectory.ToolDef{{Name: ""}}, offered...))
	if f, ok := sc.checkCall(&trajectory.ToolCall{Name: "web_search", Arguments: `{}`}, idx); ok {
		t.Errorf("got %+v", f)
	}
	// Known tools are still validated.
	if _, ok := sc.checkCall(&trajectory.ToolCall{Name: "lookup", Arguments: `{}`}, idx); !ok {
		t.Error("invalid arguments accepted")
	}
}

func TestUnwrapParameters(t *testing.T) {
	sc := &schemaCache{}
	wrapped := []string{
		`{"type":"function","function":{"name":"t","parameters":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}`,
		`{"name":"t","input_schema":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}`,
	}
	for _, w := range wrapped {
		idx := indexOffered([]trajectory.ToolDef{{Name: "t", Schema: json.RawMessage(w)}})
		if _, ok := sc.checkCall(&trajectory.ToolCall{Name: "t", Arguments: `{"n":"x"}`}, idx); !ok {
			t.Errorf("%s: invalid arguments accepted", w)
		}
		if f, ok := sc.checkCall(&trajectory.ToolCall{Name: "t", Arguments: `{"n":1}`}, idx); ok {
			t.Errorf("%s: valid arguments rejected: %+v", w, f)
		}
	}
}

func TestFinishReasons(t *testing.T) {
	for _, fr := range []string{"length", "MAX_TOKENS", "max_tokens"} {
		if f, ok := fromFinishReason(fr); !ok || f.Type != PlanIncomplete {
			t.Errorf("%s: got %+v", fr, f)
		}
	}
	more := map[string]FailureType{"MALFORMED_FUNCTION_CALL": SchemaMismatch, "UNEXPECTED_TOOL_CALL": WrongToolCalled, "model_context_window_exceeded": ContextOverflow}
	for fr, want := range more {
		if f, ok := fromFinishReason(fr); !ok || f.Type != want {
			t.Errorf("%s: got %+v", fr, f)
		}
	}
	for _, fr := range []string{"content_filter", "content-filter", "SAFETY", "refusal"} {
		if f, ok := fromFinishReason(fr); !ok || f.Type != Unknown || f.Reason != ReasonContentFilter {
			t.Errorf("%s: got %+v", fr, f)
		}
	}
	for _, fr := range []string{"stop", "end_turn", "tool_calls", "", "STOP"} {
		if f, ok := fromFinishReason(fr); ok {
			t.Errorf("%s: got %+v", fr, f)
		}
	}
	for _, fr := range []string{"tool_calls", "tool-calls", "tool_use", "TOOL_CALL", "function_call"} {
		if !isToolFinish(fr) {
			t.Errorf("%s is a tool finish", fr)
		}
	}
}

func TestTruncatedFinalAnswer(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().llm(tc("1", "lookup", `{"city":"Paris"}`)).tool("lookup", "1", `{"city":"Paris"}`)
	b.add(trajectory.Step{Kind: trajectory.StepLLM, OutputText: "It is 18 degrees and", FinishReasons: []string{"length"}})
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, PlanIncomplete)
	if v.Signal != SignalFinishReason {
		t.Errorf("signal %s", v.Signal)
	}
	// The run-level finish reason counts too.
	b = newRun().answer("It is")
	b.run.FinishReason = "length"
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, PlanIncomplete)
}

func TestContentFilterIsUnknownWithReason(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun().add(trajectory.Step{Kind: trajectory.StepLLM, FinishReasons: []string{"content_filter"}})
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, Unknown)
	if v.Reason != ReasonContentFilter {
		t.Errorf("reason %q", v.Reason)
	}
}

func TestSilentStepLimit(t *testing.T) {
	c := mustNew(t, Options{})
	// Distinct calls, five tool-calling turns, no answer, no error.
	b := newRun()
	for i, city := range []string{"Paris", "Lyon", "Nice", "Lille", "Metz"} {
		id := string(rune('a' + i))
		args := `{"city":"` + city + `"}`
		b.llm(tc(id, "lookup", args)).tool("lookup", id, args)
	}
	v := c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, PlanIncomplete)
	if v.Signal != SignalStepLimit {
		t.Errorf("signal %s", v.Signal)
	}
	// The same calls repeated: a loop.
	b = newRun()
	for i := range 5 {
		id := string(rune('a' + i))
		b.llm(tc(id, "lookup", `{"city":"Paris"}`)).tool("lookup", id, `{"city": "Paris"}`)
	}
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, LoopDetected)
	// A stop after one turn is not a step limit. With the root span
	// present and no run-level finish reason, a tool may have ended the
	// run on purpose (tools that return directly): no verdict.
	b = newRun().llm(tc("a", "lookup", `{"city":"Paris"}`)).tool("lookup", "a", `{"city":"Paris"}`)
	wantVerdict(t, c.Classify(&b.run), OutcomeOK, "")
	// When the run says it stopped on tool calls, or its root was lost,
	// it failed without saying why.
	b.run.FinishReason = "tool-calls"
	v = c.Classify(&b.run)
	wantVerdict(t, v, OutcomeFailed, Unknown)
	if v.Reason != ReasonNoFinalAnswer {
		t.Errorf("reason %q", v.Reason)
	}
	b.run.FinishReason, b.run.RootFound, b.run.Orphans = "", false, 2
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, Unknown)
	// A failed last tool explains the stop better than a step limit.
	b = newRun()
	for i, city := range []string{"Paris", "Lyon", "Nice"} {
		id := string(rune('a' + i))
		args := `{"city":"` + city + `"}`
		b.llm(tc(id, "lookup", args))
		if i < 2 {
			b.tool("lookup", id, args)
		} else {
			b.toolErr("lookup", id, args, "Error", "503 Service Unavailable")
		}
	}
	b.run.FinishReason = "tool-calls"
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, ExternalFault)
}

func TestRootLost(t *testing.T) {
	c := mustNew(t, Options{})
	// Only setup spans arrived, as orphans: the agent never ended its
	// root span. The run failed; nothing says why.
	run := trajectory.Run{RootFound: false, Orphans: 1}
	v := c.Classify(&run)
	wantVerdict(t, v, OutcomeFailed, Unknown)
	if v.Reason != ReasonRootLost {
		t.Errorf("reason %q", v.Reason)
	}
	// A complete run without steps says nothing.
	wantVerdict(t, c.Classify(&trajectory.Run{RootFound: true}), OutcomeOK, "")
}

func TestStepLimitException(t *testing.T) {
	c := mustNew(t, Options{})
	b := newRun()
	for i, city := range []string{"Paris", "Lyon"} {
		id := string(rune('a' + i))
		args := `{"city":"` + city + `"}`
		b.llm(tc(id, "lookup", args)).tool("lookup", id, args)
	}
	b.rootError("GraphRecursionError", "Recursion limit of 10 reached without hitting a stop condition.")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, PlanIncomplete)
	b = newRun()
	for i := range 3 {
		id := string(rune('a' + i))
		b.llm(tc(id, "lookup", `{"city":"Paris"}`)).tool("lookup", id, `{"city":"Paris"}`)
	}
	b.rootError("Error", "Agent stopped after 3 steps without producing a final answer")
	wantVerdict(t, c.Classify(&b.run), OutcomeFailed, LoopDetected)
}

// offeredIndex.lookup searches the definitions in place; it answers what
// an index by name of the named definitions would (a later definition of
// a name replacing an earlier one), with open set when one has no name.
func FuzzOfferedLookup(f *testing.F) {
	f.Add("a,b,a", "a")
	f.Add("a,,b", "c")
	f.Add(",", "")
	f.Add("lookup,convert", "convert")
	f.Fuzz(func(t *testing.T, names, name string) {
		var defs []trajectory.ToolDef
		for i, n := range strings.Split(names, ",") {
			defs = append(defs, trajectory.ToolDef{Name: n, Schema: json.RawMessage(strconv.Itoa(i))})
		}
		byName := map[string]*trajectory.ToolDef{}
		open := false
		for i := range defs {
			if defs[i].Name != "" {
				byName[defs[i].Name] = &defs[i]
			} else {
				open = true
			}
		}
		wantDef, wantOK := byName[name]
		def, ok, gotOpen := indexOffered(defs).lookup(name)
		if ok != wantOK || def != wantDef || !ok && gotOpen != open {
			t.Fatalf("lookup(%q) in %q: %v %v %v, want %v %v %v", name, names, def, ok, gotOpen, wantDef, wantOK, open)
		}
	})
}

// refCheckCall is checkCall as it was written first: the arguments are
// checked with json.Valid before the schema is looked up and they are
// decoded.
func refCheckCall(sc *schemaCache, call *trajectory.ToolCall, offered []trajectory.ToolDef) (finding, bool) {
	if len(offered) == 0 || call.Name == "" {
		return finding{}, false
	}
	byName := map[string]*trajectory.ToolDef{}
	open := false
	for i := range offered {
		if offered[i].Name != "" {
			byName[offered[i].Name] = &offered[i]
		} else {
			open = true
		}
	}
	def, ok := byName[call.Name]
	if !ok {
		if open {
			return finding{}, false
		}
		return finding{Type: WrongToolCalled, Signal: SignalManifest, Confidence: confManifest}, true
	}
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return finding{Type: SchemaMismatch, Signal: SignalJSONSchema, Rule: "malformed_json", Confidence: confJSONSchema}, true
	}
	sch := sc.get(def.Schema)
	if sch == nil {
		return finding{}, false
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return finding{Type: SchemaMismatch, Signal: SignalJSONSchema, Rule: "malformed_json", Confidence: confJSONSchema}, true
	}
	if s, ok := v.(string); ok {
		if inner, err := jsonschema.UnmarshalJSON(strings.NewReader(s)); err == nil {
			v = inner
		}
	}
	if validate(sch, v) {
		return finding{}, false
	}
	return finding{Type: SchemaMismatch, Signal: SignalJSONSchema, Confidence: confJSONSchema}, true
}

// checkCall answers as refCheckCall on any arguments, with and without a
// usable schema, for offered, missing and hosted tools.
func FuzzCheckCall(f *testing.F) {
	for _, a := range []string{`{"city":"Paris"}`, `{"city":"Paris"`, ``, ` `, `1 2`, `{"a":1}{}`, `"{\"city\":\"x\"}"`, `[`, `{"city":"\xff"}`, `nul`, `{"amount":1e999,"to":"EUR"}`} {
		for _, n := range []string{"lookup", "convert", "t", "none", ""} {
			f.Add(n, a)
		}
	}
	sc := &schemaCache{}
	defs := append([]trajectory.ToolDef{{Name: "t", Schema: json.RawMessage(`{}`)}}, offered...)
	hosted := append([]trajectory.ToolDef{{Name: ""}}, defs...)
	f.Fuzz(func(t *testing.T, name, args string) {
		call := &trajectory.ToolCall{Name: name, Arguments: args}
		for _, ds := range [][]trajectory.ToolDef{defs, hosted, nil} {
			got, gotOK := sc.checkCall(call, indexOffered(ds))
			want, wantOK := refCheckCall(sc, call, ds)
			if got != want || gotOK != wantOK {
				t.Fatalf("%s(%q) offered %d: %+v %v, want %+v %v", name, args, len(ds), got, gotOK, want, wantOK)
			}
		}
	})
}
