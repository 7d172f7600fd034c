package classifier

import (
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

// Texts around the HTTP status rule's number prefilter: with and without
// the prefilters the answer is the same.
func TestStatusNumberPrefilter(t *testing.T) {
	for _, s := range []string{
		"HTTP 503", "status=502)", "(429)", "error 404-", `{"code":"500"}`, "Status 503: overloaded", "503 Service Unavailable",
		"HTTP/1.1 504 Gateway Timeout", "http/1503 x", "Error code: 400 - bad", "'401'", "code: 599,", "code: 600,", "ends with 502",
		"price 19.99", "id A-1042", "503records", "1000 items", "(500 tokens)", "0503", "x5030", `{"status":"ok","total":159.9}`,
	} {
		a, okA := classifyTextWith(s, true)
		b, okB := classifyTextWith(s, false)
		if a != b || okA != okB {
			t.Errorf("%q: prefilter %+v/%v, full %+v/%v", s, a, okA, b, okB)
		}
	}
	for s, want := range map[string]bool{"a 503": true, "503": true, "503x": false, "0503 ": true, "6003 ": false, "19.99": false, "(429)": true} {
		if got := hasStatusNumber(s); got != want {
			t.Errorf("hasStatusNumber(%q) = %v", s, got)
		}
	}
}

// The JSON-RPC rule's code prefilter: with and without it the answer is
// the same.
func TestJSONRPCCodePrefilter(t *testing.T) {
	for _, s := range []string{
		"MCP error -32602: Invalid params", `{"code": -32601, "message": "Method not found"}`, "json-rpc error (-32000) server",
		"rpc error: -32603", "MCP error -326020: x", "MCP error -3260: x", "MCP error -32602x", "MCP error -32602_", "SKU-3312 shipped",
		`{"sku":"SKU-33","qty":1}`, "2026-03-01", "-3", "mcp error -32700",
	} {
		a, okA := classifyTextWith(s, true)
		b, okB := classifyTextWith(s, false)
		if a != b || okA != okB {
			t.Errorf("%q: prefilter %+v/%v, full %+v/%v", s, a, okA, b, okB)
		}
	}
	for s, want := range map[string]bool{"error -32602": true, "-32602": true, "x-32602.": true, "-326021": false, "-3260": false,
		"-32602a": false, "SKU-33": false, "a-3 -32000": true, "2026-03-01": false} {
		if got := hasJSONRPCCode(s); got != want {
			t.Errorf("hasJSONRPCCode(%q) = %v", s, got)
		}
	}
	if mayClassifyAs(`{"status":"ok","items":[{"sku":"SKU-3312","qty":1}]}`, WrongToolCalled, SchemaMismatch) {
		t.Error("an id holding -3 needs no rule")
	}
}

// mayClassifyAs never says no to a text the rules classify as one of the
// types asked about.
func checkMayClassifyAs(t *testing.T, s string) {
	t.Helper()
	// resultHeadFailure's probe (the narrowed scanner) answers as the
	// full one for the types it was narrowed to.
	var full, narrow ruleText
	if okF, okN := full.prepare(s), narrow.prepareWith(s, wrongCallKeys); okF != okN ||
		okF && full.mayClassifyAs(WrongToolCalled, SchemaMismatch) != narrow.mayClassifyAs(WrongToolCalled, SchemaMismatch) {
		t.Errorf("mayClassifyAs(%q, wrong tool, schema): narrowed scanner and full scanner differ", s)
	}
	if full.prepare(s) && full.mayClassifyAs(WrongToolCalled, SchemaMismatch) != narrow.mayPass(wrongCallRules) {
		t.Errorf("mayPass(%q, wrongCallRules) differs from mayClassifyAs(wrong tool, schema)", s)
	}
	f, ok := classifyText(s)
	for _, types := range [][]FailureType{{WrongToolCalled, SchemaMismatch}, {Timeout}, {ExternalFault, ContextOverflow}} {
		if ok && slices.Contains(types, f.Type) && !mayClassifyAs(s, types...) {
			t.Errorf("mayClassifyAs(%q, %v) = false, classified %+v", s, types, f)
		}
	}
}

func TestMayClassifyAs(t *testing.T) {
	for _, tc := range heldOutPhrasings {
		checkMayClassifyAs(t, tc.text)
	}
	for _, s := range nearMisses {
		checkMayClassifyAs(t, s)
	}
	if mayClassifyAs(`{"status":"ok","order":{"id":"A-1042","total":59.9}}`, WrongToolCalled, SchemaMismatch) {
		t.Error("an ordinary result needs no rule")
	}
	if !mayClassifyAs("Tool 'refund' not found", WrongToolCalled) {
		t.Error("a wrong-tool phrasing must be asked")
	}
}

func FuzzMayClassifyAs(f *testing.F) {
	for _, tc := range heldOutPhrasings {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, s string) { checkMayClassifyAs(t, s) })
}

// Every type a rule's check can return is in its yields (mayClassifyAs
// relies on it), and every rule with a check declares them.
func TestCheckYields(t *testing.T) {
	codes := func(from, to int) []string {
		var out []string
		for c := from; c <= to; c++ {
			out = append(out, strconv.Itoa(c))
		}
		return out
	}
	inputs := map[string][][]string{}
	for _, c := range codes(100, 599) {
		inputs["http_status_text"] = append(inputs["http_status_text"], []string{"", c}, []string{"", "", c})
	}
	for _, c := range codes(-32768, -32000) {
		inputs["jsonrpc_text"] = append(inputs["jsonrpc_text"], []string{"", c}, []string{"", "", c})
	}
	for _, s := range []string{"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "UNAUTHENTICATED", "PERMISSION_DENIED", "OTHER"} {
		inputs["grpc_status"] = append(inputs["grpc_status"], []string{"", s})
	}
	texts := []string{"", "tool not found", "unknown tool x", "invalid params"}
	for _, r := range textRules {
		if r.check == nil {
			continue
		}
		if len(r.yields) == 0 {
			t.Errorf("rule %s has a check and no yields", r.name)
			continue
		}
		in, ok := inputs[r.name]
		if !ok {
			t.Errorf("rule %s: no enumerated inputs for its check (add them here)", r.name)
			continue
		}
		for _, m := range in {
			for _, text := range texts {
				if f, ok := r.check(m, text); ok && !slices.Contains(r.yields, f.Type) {
					t.Errorf("rule %s: check(%q, %q) = %s, not in yields %v", r.name, m, text, f.Type, r.yields)
				}
			}
		}
	}
}

// The result prefilters (jsonError's keys, placeholderValue's words) never
// change an answer.
func checkResultPrefilters(t *testing.T, s string) {
	t.Helper()
	if got, want := opensLikeError(s), errorPrefix.MatchString(s) || leadingException.MatchString(s) || wrappedException.MatchString(s); got != want {
		t.Errorf("opensLikeError(%q) = %v, the expressions %v", s, got, want)
	}
	if got, want := textEvidence(s), refTextEvidence(s); got != want {
		t.Errorf("textEvidence(%q) = %+v, the expressions %+v", s, got, want)
	}
	if got, want := mayOpenWeakly(s) && weakErrorPrefix.MatchString(s), weakErrorPrefix.MatchString(s); got != want {
		t.Errorf("weak opening of %q: prefiltered %v, expression %v", s, got, want)
	}
	if len(s) >= 2 && s[0] == '{' && len(s) <= maxResultJSON {
		a, okA := jsonError(s)
		b, okB := jsonErrorShape(s)
		if a != b || okA != okB {
			t.Errorf("jsonError(%q): prefiltered %+v/%v, full %+v/%v", s, a, okA, b, okB)
		}
	}
	c := strings.TrimSpace(s)
	if len(c) > maxPlaceholderScan {
		c = c[:maxPlaceholderScan]
	}
	if len(c) >= 2 && (c[0] == '{' || c[0] == '[') && placeholderValue(s) != placeholderRe.MatchString(c) {
		t.Errorf("placeholderValue(%q) differs from its expression", s)
	}
}

// refTextEvidence is textEvidence without the prefilters of its
// expressions.
func refTextEvidence(text string) trajectory.ErrorInfo {
	if m := leadingException.FindStringSubmatch(text); m != nil {
		return trajectory.ErrorInfo{Type: m[1], Message: text[len(m[0]):]}
	}
	if m := wrappedException.FindStringSubmatch(text); m != nil {
		return trajectory.ErrorInfo{Type: m[1], Message: text[len(m[0]):]}
	}
	if info, ok := jsonError(strings.TrimSpace(text)); ok {
		return info
	}
	return trajectory.ErrorInfo{Message: text}
}

var resultPrefilterCases = []string{
	"TypeError : x", "ReadTimeout: x", "  a.b_c.TimeoutError\t:y", "Fault: x", "xFault:", "Error(", "EXCEPTION ( E ) : m", "Exception(x): y", "the tool failed", "I encountered an error",
	`{"a":\\undefined}`, `{"a"=  'NaN' ]`, `{"a":"NaN"x}`, `[1,{"b":\f undefined }]`, `{"a":\"u"}`,
	`{"error":"boom"}`, `{"errors":[{"m":1}],"data":null}`, `{"isError":true}`, `{"is_error":true}`, `{"message":"x","name":"TypeError"}`,
	`{"detail":"d","stack":"s"}`, `{"reason":"r","status":"ERROR"}`, `{"\u0065rror":"escaped key"}`, `{"errorMessage":"m","type":"ValueError"}`,
	"Error: boom", "\t\n TypeError: x", " error(Timeout): y", "_Private.Error: z", "An error occurred", "Tool failed", "\u212aeyError: k",
	"ſome error", "é Error: x", "[Error] x", "1 Error: x", "",
	"ſorry, no", " \tFailed to x", "Could not y", "UNABLE TO z", "Sorry, w", "cannot v", "fatal", "xfailed",
	`{"a":"b","error":1}`, `{"terror":1}`, `{"messages":[]}`, `{"x":"message"}`, `{"error`, `{"reason"`, `{"detail":"x"}`,
	`{"error_message":"m"}`, `{"isError":false,"message":""}`, `{"errors":[],"data":{}}`,
	`{"temperature":21,"city":"Paris"}`, `{"ok":true,"items":[1,2]}`, `{"a":undefined}`, `{"a": "NaN"}`, `[{"x":\"undefined\"}]`, `{"a":"undefinedness"}`,
}

func TestResultPrefilters(t *testing.T) {
	for _, s := range resultPrefilterCases {
		checkResultPrefilters(t, s)
	}
	for _, tc := range heldOutPhrasings {
		checkResultPrefilters(t, tc.text)
	}
}

func FuzzResultPrefilters(f *testing.F) {
	for _, s := range resultPrefilterCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkResultPrefilters(t, s) })
}

// The keys hold on non-ASCII text too (read on its ASCII letters), except
// where the Kelvin sign or the long s could stand for k or s.
func TestPrefilterNonASCII(t *testing.T) {
	for _, s := range ruleTestTexts() {
		for _, v := range []string{"— " + s + " é", s + " ✗", strings.ReplaceAll(s, "k", "\u212a"), strings.ReplaceAll(s, "s", "\u017f")} {
			a, okA := classifyTextWith(v, true)
			b, okB := classifyTextWith(v, false)
			if a != b || okA != okB {
				t.Errorf("%q: prefilter %+v/%v, full %+v/%v", v, a, okA, b, okB)
			}
			checkMayClassifyAs(t, v)
		}
	}
	if _, ok := prefilterText("invalid api \u212aey"); ok {
		t.Error("the Kelvin sign folds to k: no prefilter is exact")
	}
}

// leadingExceptionMatch reads what leadingException matches: the name
// it captures and where the match ends, on texts made of the pieces an
// exception opening is made of.
func TestLeadingExceptionMatchIsTheExpression(t *testing.T) {
	pieces := []string{" ", "\t", "\n", ":", ".", "_", "a", "Z", "9", "Error", "Exception", "Fault", "Timeout", "Err", "x:", "é", "-", "(", "\u212a"}
	r := rand.New(rand.NewSource(5))
	texts := []string{"Error: x", "Timeout: x", "9TypeError: x", ".TypeError: x", "TypeError x", "TypeErrorx: y", "_Error:", "a.Error :  b", "  KeyError\n: \n"}
	for range 100000 {
		var b strings.Builder
		for range r.Intn(8) {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	matched := 0
	for _, s := range texts {
		name, end, ok := leadingExceptionMatch(s)
		m := leadingException.FindStringSubmatchIndex(s)
		if ok != (m != nil) || ok && (name != s[m[2]:m[3]] || end != m[1]) {
			t.Fatalf("leadingExceptionMatch(%q) = %q, %d, %v; the expression gives %v", s, name, end, ok, m)
		}
		if ok {
			matched++
		}
	}
	if matched == 0 {
		t.Fatal("no text matched: the texts do not test a match")
	}
}
