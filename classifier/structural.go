package classifier

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/triage-otel/triage/trajectory"
)

// Structural signals read the shape of the trajectory rather than any
// message: a requested tool that was not offered, arguments that fail the
// offered schema, a final finish reason, a run that stops while still
// calling tools. They are the strongest evidence the trace holds.

const (
	confManifest     = 0.95
	confJSONSchema   = 0.9
	confFinishReason = 0.9
	confStepLimit    = 0.8
	confNoAnswer     = 0.5
	confRootLost     = 0.3
)

// minStepLimitSteps is how many tool-calling model turns must end a run
// before a silent stop is read as a step limit. Framework limits are
// several turns (5, 10, 25); a stop after one or two turns is more likely
// a crash whose spans were lost, and is left unknown.
const minStepLimitSteps = 3

// maxSchemaBytes bounds the schemas compiled: a tool definition larger
// than this is not validated (no structural verdict).
const maxSchemaBytes = 256 << 10

// schemaCache compiles each distinct schema once. A Classifier keeps one
// across calls: an agent offers the same tool definitions on every turn
// of every run, and compiling (which validates the schema against its
// meta-schema) costs far more than validating arguments. It is bounded,
// and safe for concurrent use; compiled schemas are read-only.
type schemaCache struct {
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema // nil value: failed to compile
}

// maxCachedSchemas bounds the cache; when full it starts over.
const maxCachedSchemas = 1024

func (sc *schemaCache) get(raw json.RawMessage) *jsonschema.Schema {
	if len(raw) == 0 || len(raw) > maxSchemaBytes {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	// Looked up with the bytes as they are (no copy); a key is made
	// only for a schema compiled.
	if s, ok := sc.compiled[string(raw)]; ok {
		return s
	}
	if sc.compiled == nil || len(sc.compiled) >= maxCachedSchemas {
		sc.compiled = make(map[string]*jsonschema.Schema)
	}
	s := compileSchema(raw)
	sc.compiled[string(raw)] = s
	return s
}

// refusingLoader keeps the compiler from reading files or the network for
// $ref targets: an unresolvable schema gives no structural verdict.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("classifier: external schema %q not loaded", url)
}

func compileSchema(raw json.RawMessage) (s *jsonschema.Schema) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	doc = unwrapParameters(doc)
	obj, ok := doc.(map[string]any)
	if !ok || len(obj) == 0 {
		// true/false schemas and empty schemas accept (or reject) all
		// arguments whatever they are; they say nothing about this call.
		return nil
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	const loc = "mem:///tool-parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil
	}
	s, err = c.Compile(loc)
	if err != nil {
		return nil
	}
	return s
}

// unwrapParameters accepts a whole tool definition where only the
// parameters schema was expected: conventions record {"type":"function",
// "function":{"parameters":…}}, {"inputSchema":…}, {"input_schema":…} or
// {"jsonSchema":…}.
func unwrapParameters(doc any) any {
	for range 3 {
		obj, ok := doc.(map[string]any)
		if !ok {
			return doc
		}
		if _, ok := obj["properties"]; ok {
			return doc
		}
		next := false
		for _, k := range []string{"function", "parameters", "inputSchema", "input_schema", "jsonSchema", "json_schema", "schema"} {
			if v, ok := obj[k].(map[string]any); ok {
				doc, next = v, true
				break
			}
		}
		if !next {
			return doc
		}
	}
	return doc
}

// offeredIndex looks up the tools an LLM step was offered. It is the
// definitions themselves, searched in place: a step offers a few tools
// (tens at most), and a search costs less than building an index for the
// one or two calls each step makes.
type offeredIndex struct {
	defs []trajectory.ToolDef
}

func indexOffered(defs []trajectory.ToolDef) *offeredIndex {
	if len(defs) == 0 {
		return nil
	}
	return &offeredIndex{defs: defs}
}

// lookup returns the definition of the tool named name (the last one of
// that name, as a later definition replaces an earlier one). When there is
// none, open reports whether a definition has no name: provider-hosted
// tools (web search, code execution) are offered by type, and their call
// names are not known, so a name missing from the definitions proves
// nothing.
func (o *offeredIndex) lookup(name string) (def *trajectory.ToolDef, ok, open bool) {
	if o == nil {
		return nil, false, false
	}
	for i := len(o.defs) - 1; i >= 0; i-- {
		switch o.defs[i].Name {
		case "":
			open = true
		case name:
			return &o.defs[i], true, false
		}
	}
	return nil, false, open
}

// checkCall checks a requested call against the tools offered with it.
func (sc *schemaCache) checkCall(call *trajectory.ToolCall, offered *offeredIndex) (finding, bool) {
	if offered == nil || len(offered.defs) == 0 || call.Name == "" {
		return finding{}, false
	}
	def, ok, open := offered.lookup(call.Name)
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
	sch := sc.get(def.Schema)
	if sch == nil {
		if !json.Valid([]byte(args)) {
			return finding{Type: SchemaMismatch, Signal: SignalJSONSchema, Rule: "malformed_json", Confidence: confJSONSchema}, true
		}
		return finding{}, false
	}
	// Decoding the arguments checks them too: it fails exactly on the
	// arguments json.Valid rejects (FuzzCheckCall), so they are not
	// checked first.
	v, err := decodeArgs(args)
	if err != nil {
		return finding{Type: SchemaMismatch, Signal: SignalJSONSchema, Rule: "malformed_json", Confidence: confJSONSchema}, true
	}
	if s, ok := v.(string); ok {
		// Some instrumentations record the arguments JSON-encoded twice.
		if inner, err := decodeArgs(s); err == nil {
			v = inner
		}
	}
	if validate(sch, v) {
		return finding{}, false
	}
	return finding{Type: SchemaMismatch, Signal: SignalJSONSchema, Confidence: confJSONSchema}, true
}

// validate reports whether v is valid; a validator failure that is not a
// validation error (or a panic) counts as valid: no verdict without
// evidence.
func validate(sch *jsonschema.Schema, v any) (valid bool) {
	defer func() {
		if recover() != nil {
			valid = true
		}
	}()
	err := sch.Validate(v)
	if err == nil {
		return true
	}
	var ve *jsonschema.ValidationError
	return !errors.As(err, &ve)
}

// normFinishReason is the spelling a finish-reason finding names as its
// rule.
func normFinishReason(s string) string { return trajectory.NormFinishReason(s) }

// isToolFinish reports whether a finish reason says the model stopped to
// call tools (classes: trajectory.FinishReasonClass).
func isToolFinish(fr string) bool {
	return trajectory.FinishReasonClass(fr) == trajectory.FinishToolCalls
}

// fromFinishReason reads a final finish reason.
func fromFinishReason(fr string) (finding, bool) {
	f := finding{Signal: SignalFinishReason, Rule: normFinishReason(fr), Confidence: confFinishReason}
	switch trajectory.FinishReasonClass(fr) {
	case trajectory.FinishLength:
		f.Type = PlanIncomplete
	case trajectory.FinishContextOverflow:
		f.Type = ContextOverflow
	case trajectory.FinishMalformedCall:
		// The model emitted a tool call the provider could not parse.
		f.Type = SchemaMismatch
	case trajectory.FinishUnexpectedCall:
		// The model called a tool that was not offered.
		f.Type = WrongToolCalled
	case trajectory.FinishContentFilter:
		f.Type, f.Reason = Unknown, ReasonContentFilter
	default:
		return finding{}, false
	}
	return f, true
}

// finalFinishReason is the run's last finish reason: the one the run
// reports, else the last one of its last LLM step.
func finalFinishReason(run *trajectory.Run, lastLLM *trajectory.Step) string {
	if run.FinishReason != "" {
		return run.FinishReason
	}
	if lastLLM != nil && len(lastLLM.FinishReasons) > 0 {
		return lastLLM.FinishReasons[len(lastLLM.FinishReasons)-1]
	}
	return ""
}

// requestsTools reports whether an LLM step ended asking for tools.
func requestsTools(s *trajectory.Step) bool {
	if len(s.Requested) > 0 {
		return true
	}
	for _, fr := range s.FinishReasons {
		if isToolFinish(fr) {
			return true
		}
	}
	return false
}

// trailingToolTurns counts the LLM steps at the end of the run that all
// asked for tools, stopping at the first that did not.
func trailingToolTurns(steps []trajectory.Step) int {
	n := 0
	for i := len(steps) - 1; i >= 0; i-- {
		s := &steps[i]
		if s.Kind != trajectory.StepLLM {
			continue
		}
		if !requestsTools(s) {
			break
		}
		n++
	}
	return n
}
