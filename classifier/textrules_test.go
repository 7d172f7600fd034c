package classifier

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/triage-otel/triage/trajectory"
)

// Phrasings from SDKs and frameworks that are not in the shipped corpora
// (written from their sources and docs), to check that the rules are
// families, not the corpus sentences.
var heldOutPhrasings = []struct {
	text   string
	want   FailureType
	reason string
}{
	// wrong tool
	{"ModelBehaviorError: Tool lookup_order not found in agent support-bot", WrongToolCalled, ""},
	{"Unknown tool name: 'fetch_invoice'. Available tools: search, calculator", WrongToolCalled, ""},
	{"Unknown tool: create_refund", WrongToolCalled, ""},
	{"Action 'Browse Web' don't exist, these are the only available Actions: Search", WrongToolCalled, ""},
	{"I tried to use the tool scrape_site, but it doesn't exist.", WrongToolCalled, ""},
	{"Function 'translate_text' not found in plugin 'text'", WrongToolCalled, ""},
	{"Function call name 'send_fax' is not in the function declarations", WrongToolCalled, ""},
	{"Tool 'lookup' is not defined in toolConfig", WrongToolCalled, ""},
	{"No such tool: weather.v2", WrongToolCalled, ""},
	{"Unknown tool send_fax, should be instead one of ['search', 'final_answer']", WrongToolCalled, ""},
	{"MCP error -32601: Method not found", WrongToolCalled, ""},
	{"model 'llama3.3' not found, try pulling it first", WrongToolCalled, ""},
	{"tool call validation failed: attempted to call tool 'brave_search' which was not in request.tools", WrongToolCalled, ""},
	{"Function get_forecast is not found in the tools_dict.", WrongToolCalled, ""},
	// schema
	{"1 validation error for refund_order\norder_id\n  Field required [type=missing]", SchemaMismatch, ""},
	{"Invalid JSON input for tool search_flights: {\"from\": \"BER\"", SchemaMismatch, ""},
	{"data/amount must be number", SchemaMismatch, ""},
	{"data must have required property 'currency'", SchemaMismatch, ""},
	{"'one hundred' is not of type 'number'", SchemaMismatch, ""},
	{"json: cannot unmarshal string into Go struct field args.amount of type float64", SchemaMismatch, ""},
	{"SyntaxError: Unexpected end of JSON input", SchemaMismatch, ""},
	{"MCP error -32602: Invalid params", SchemaMismatch, ""},
	{"Error: the Action Input is not a valid key, value dictionary.", SchemaMismatch, ""},
	{"Missing value for parameter 'city'", SchemaMismatch, ""},
	{"TypeError: get_weather() missing 1 required positional argument: 'city'", SchemaMismatch, ""},
	{"TypeError: get_weather() got an unexpected keyword argument 'days'", SchemaMismatch, ""},
	{"The 'city' argument is required", SchemaMismatch, ""},
	{"data must NOT have additional properties", SchemaMismatch, ""},
	{"Unrecognized key(s) in object: 'days'", SchemaMismatch, ""},
	{"Error executing tool convert: 1 validation error for convertArguments\namount\n  Input should be a valid number", SchemaMismatch, ""},
	// timeout
	{"context deadline exceeded", Timeout, ""},
	{"dial tcp 10.0.0.1:443: i/o timeout", Timeout, ""},
	{"Client.Timeout exceeded while awaiting headers", Timeout, ""},
	{"java.net.SocketTimeoutException: Read timed out", Timeout, ""},
	{"MCP error -32001: Request timed out", Timeout, ""},
	{"HTTP 504 from upstream", Timeout, ""},
	// external
	{"529 Overloaded", ExternalFault, ""},
	{"503 The model is overloaded. Please try again later.", ExternalFault, ""},
	{"upstream connect error or disconnect/reset before headers. reset reason: overflow", ExternalFault, ""},
	{"Requests to the ChatCompletions_Create Operation have exceeded token rate limit of your current pricing tier.", ExternalFault, ""},
	{"Error code: 502 - Bad Gateway", ExternalFault, ""},
	{"Service request failed. Status: 429 (Too Many Requests)", ExternalFault, ""},
	{"huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://x", ExternalFault, ""},
	// Google's canonical RESOURCE_EXHAUSTED message, without its code
	{"Resources have been exhausted for model text-bison; try again in a few seconds", ExternalFault, ""},
	// context
	{"prompt is too long: 208310 tokens > 200000 maximum", ContextOverflow, ""},
	{"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", ContextOverflow, ""},
	{"Input is too long for requested model.", ContextOverflow, ""},
	{"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 5000 `inputs` tokens", ContextOverflow, ""},
	{"This endpoint's maximum context length is 8192 tokens", ContextOverflow, ""},
	{"too many tokens: total number of tokens in the prompt cannot exceed 4081", ContextOverflow, ""},
	{"Request too large: the prompt has 21034 tokens but this model supports at most 16384 input tokens.", ContextOverflow, ""},
	{"Prompt contains 40000 tokens, too large for model with 32768 maximum context length", ContextOverflow, ""},
	{"input length exceeds the context length", ContextOverflow, ""},
	{"This model's maximum prompt length is 131072 but the request contains 140000 tokens.", ContextOverflow, ""},
	{"the messages use 9000 tokens, more than the 8000 the deployment allows (limit)", ContextOverflow, ""},
	{"this endpoint accepts at most 4k tokens", ContextOverflow, ""},
	{"maximum input size exceeded for this model", ContextOverflow, ""},
	{"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000.", ExternalFault, ""},
	// step limits resolve against the trajectory
	{"Max turns (10) exceeded", stepLimitType, ""},
	{"Agent stopped due to iteration limit or time limit.", stepLimitType, ""},
	// not retryable: unknown with a reason
	{"Request had invalid authentication credentials. Expected OAuth 2 access token", Unknown, ReasonAuth},
	{"authentication_error: invalid x-api-key", Unknown, ReasonAuth},
	{"Your credit balance is too low to access the Anthropic API.", Unknown, ReasonBilling},
	{"You exceeded your current quota, please check your plan and billing details.", Unknown, ReasonBilling},
	{"Your request was rejected as a result of our safety system.", Unknown, ReasonContentFilter},
	{"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", Unknown, ReasonContentFilter},
	{"Session expired, please log in again", Unknown, ReasonSessionExpired},
	{"connect ECONNREFUSED 127.0.0.1:11434", Unknown, ReasonConnection},
	{"socket hang up", Unknown, ReasonConnection},
}

func TestTextRulesHeldOutPhrasings(t *testing.T) {
	for _, tc := range heldOutPhrasings {
		f, ok := classifyText(tc.text)
		if !ok {
			t.Errorf("%q: no rule fired, want %s", tc.text, tc.want)
			continue
		}
		if f.Type != tc.want || f.Reason != tc.reason {
			t.Errorf("%q: got %s/%s (rule %s), want %s/%s", tc.text, f.Type, f.Reason, f.Rule, tc.want, tc.reason)
		}
		if f.Signal != SignalTextRule || f.Rule == "" {
			t.Errorf("%q: evidence %q/%q, want text_rule with a rule name", tc.text, f.Signal, f.Rule)
		}
	}
}

// Near misses: strings that resemble failures but must not be read as a
// failure class (unknown, with or without a reason, is acceptable: it
// routes to the safe default).
var nearMisses = []string{
	"Tool get_weather returned: city not found",
	"Error in lookup tool: customer not found",
	"Tool execution completed in 429 ms",
	"Processed 500 records in 503 ms",
	"Found 503 results for query 'refund policy'",
	"Imported 'inventory' (500 records)",
	"Error: 500 items could not be synced",
	"function not_found_handler registered",
	"Validation passed for 3 fields",
	"Expected delivery date: tomorrow",
	"rate: 1.08 EUR/USD",
	"The context of this conversation is about maximum performance",
	"No tools were needed to answer",
	"Server responded 200 OK",
	"Connection established to api.example.com",
	"Error code: 400 - bad request",
	"404 page not found",
	"the tool list contains 4 tools",
	"The resource 'order 123' was not found",
	"Endpoint /api/orders/7 not found",
	"No resource with ID '42' was found.",
	"TypeError: fetchWeather is not a function",
	"You can increase the timeout in the client settings",
	"This is forbidden knowledge, said the wizard",
	"Retrying request (attempt 2 of 5)",
	"413 Request Entity Too Large",
	"The attachment is too large to upload (max 25 MB)",
	"Summary: the document has 5000 tokens and 12 sections",
	"",
	"   ",
}

func TestTextRulesNearMisses(t *testing.T) {
	for _, s := range nearMisses {
		f, ok := classifyText(s)
		if ok && f.Type != Unknown {
			t.Errorf("%q: rule %s fired %s, want no failure class", s, f.Rule, f.Type)
		}
	}
}

func TestTextRulesOrder(t *testing.T) {
	cases := []struct {
		text string
		want FailureType
	}{
		// tool-not-found wins over the schema words around it
		{"Invalid value for 'tool_choice': no function named 'lookup_user' in tools", WrongToolCalled},
		// -32602 carries unknown tools too; the text decides
		{"MCP error -32602: Tool get_forecast not found", WrongToolCalled},
		{"MCP error -32602: Input validation error: Invalid arguments for tool convert: expected number, received string", SchemaMismatch},
		// a 400 alone is ambiguous: the text decides
		{"400 This model's maximum context length is 8192 tokens.", ContextOverflow},
		// rate limits on tokens are not context overflow
		{"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29842, Requested 500.", ExternalFault},
		// a refused connection echoing its timeout setting is not a timeout
		{"Connection refused (connect timeout=30)", Unknown},
		{"Connection to api.example.com timed out. (connect timeout=30)", Timeout},
	}
	for _, tc := range cases {
		f, ok := classifyText(tc.text)
		if !ok || f.Type != tc.want {
			t.Errorf("%q: got %s (rule %s, ok %v), want %s", tc.text, f.Type, f.Rule, ok, tc.want)
		}
	}
}

// The keyword prefilter is an optimisation: it must never change an
// answer.
func TestTextRulePrefilter(t *testing.T) {
	for _, s := range ruleTestTexts() {
		a, okA := classifyTextWith(s, true)
		b, okB := classifyTextWith(s, false)
		if a != b || okA != okB {
			t.Errorf("%q: prefilter %+v/%v, full %+v/%v", s, a, okA, b, okB)
		}
	}
}

// The split alternatives run on lower-cased text: they must not hold
// upper-case literals, and together they must be the rule.
func TestTextRuleAlternatives(t *testing.T) {
	for _, r := range textRules {
		if len(r.alts) == 0 {
			continue
		}
		for _, alt := range r.alts {
			src := alt.re.String()
			for i := 0; i < len(src); i++ {
				if src[i] == '\\' {
					i++
					continue
				}
				if src[i] >= 'A' && src[i] <= 'Z' {
					t.Errorf("rule %s: upper-case literal in %q", r.name, src)
					break
				}
			}
		}
		joined := make([]string, len(r.alts))
		for i, a := range r.alts {
			joined[i] = a.re.String()
		}
		if got := "(?i)" + strings.Join(joined, "|"); got != r.re.String() {
			t.Errorf("rule %s: alternatives do not rebuild the rule", r.name)
		}
	}
	for expr, want := range map[string]bool{
		`\bnot authori[sz]ed\b`: true, `[^'"\x60\n]{1,80}`: true, `.+\s\w`: true, `café`: false,
		`[a-zé]`: false, `[^é]`: false, `[\x{80}-\x{10ffff}]`: true, `[\x{80}-\x{ff}]`: false,
	} {
		if got := foldSafe(expr); got != want {
			t.Errorf("foldSafe(%q) = %v, want %v", expr, got, want)
		}
	}
	if got := splitAlternatives(`a|(b|c)|[|]|d\|e`); len(got) != 4 || got[3] != `d\|e` {
		t.Errorf("split: %q", got)
	}
	for expr, want := range map[string][][]string{
		`\bnot authori[sz]ed\b`:                          {{"not authorised", "not authorized"}},
		`\bno\s+such\s+(?:tool|function)\b`:              {{"function", "tool"}, {"such"}, {"no"}},
		`\b(?:unknown|bad)\s+(?:tool|function)(?:\s+x)?`: {{"unknown", "bad"}, {"tool", "function"}},
		`\bapi[ _-]?key\b`:                               {{"api key", "api_key", "api-key", "apikey"}},
		`(?:a|b)cd`:                                      {{"acd", "bcd"}},
		`(?:ab|x?)cd`:                                    {{"abcd", "xcd", "cd"}},
		`(?:ab|\d)cd`:                                    {{"cd"}},
		`(?:ab|cd)+`:                                     {{"ab", "cd"}},
		`x?`:                                             nil,
		`(abc)`:                                          {{"abc"}},
		`[^a]+`:                                          nil,
		`\d{3}x`:                                         nil,
	} {
		got := neededLiterals(expr)
		norm := func(sets [][]string) string {
			var out []string
			for _, s := range sets {
				s = slices.Clone(s)
				slices.Sort(s)
				out = append(out, strings.Join(s, "|"))
			}
			slices.Sort(out)
			return strings.Join(out, " & ")
		}
		if norm(got) != norm(want) {
			t.Errorf("neededLiterals(%q) = %q, want %q", expr, got, want)
		}
	}
}

func TestClassifyTextExported(t *testing.T) {
	ft, rule, _, ok := ClassifyText("429 Too Many Requests")
	if !ok || ft != ExternalFault || rule == "" {
		t.Fatalf("got %s %q %v", ft, rule, ok)
	}
	if _, _, _, ok := ClassifyText("all good"); ok {
		t.Fatal("a plain sentence fired a rule")
	}
}

func TestTextRulesLongInputBounded(t *testing.T) {
	long := make([]byte, 1<<20)
	for i := range long {
		long[i] = 'a'
	}
	// Evidence past the bound is not read: the start of a message is
	// where errors say what they are.
	s := string(long) + " rate limit exceeded"
	if f, ok := classifyText(s); ok {
		t.Fatalf("read past the bound: %+v", f)
	}
	if f, ok := classifyText("rate limit exceeded " + string(long)); !ok || f.Type != ExternalFault {
		t.Fatalf("got %+v %v", f, ok)
	}
}

func FuzzTextRules(f *testing.F) {
	for _, tc := range heldOutPhrasings {
		f.Add(tc.text)
	}
	for _, s := range nearMisses {
		f.Add(s)
	}
	f.Add("\xff\xfe MCP error -32602: \x00 tool")
	// Non-ASCII text: the keys are read on its ASCII letters, except with
	// the two letters (?i) folds to ASCII ones.
	f.Add("Unauthorized — invalid API \u212aey")
	f.Add("Tool «refund» not found ✗")
	f.Add("Rate limit exceeded — retry in 5 s ⏳")
	f.Add("HTTP 503 — Service Unavailable ſ")
	f.Add("Ungültiges Argument: 'city' is required (schema validation failed) é")
	for _, s := range corpusAndCaptureTexts(f) {
		f.Add(truncate(s, maxTextLen)) // what the rules read of it
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, okA := classifyText(s)
		b, okB := classifyText(s)
		if a != b || okA != okB {
			t.Fatalf("not deterministic on %q: %+v/%v vs %+v/%v", s, a, okA, b, okB)
		}
		if full, okF := classifyTextWith(s, false); full != a || okF != okA {
			t.Fatalf("prefilter changed the answer on %q: %+v/%v vs %+v/%v", s, a, okA, full, okF)
		}
		if okA {
			if a.Type == "" || a.Signal != SignalTextRule || a.Rule == "" {
				t.Fatalf("incomplete finding on %q: %+v", s, a)
			}
			if _, known := ParseFailureType(string(a.Type)); !known && a.Type != stepLimitType {
				t.Fatalf("unknown failure type %q on %q", a.Type, s)
			}
		}
		// The error-shape reading of tool results (results.go) takes the
		// same untrusted text: it never panics and is deterministic.
		r := trajectory.ToolResult{Content: s}
		if resultIsError(&r) != resultIsError(&r) || placeholderValue(s) != placeholderValue(s) {
			t.Fatalf("result shape not deterministic on %q", s)
		}
		if e := textEvidence(s); e.Message == "" && e.Type == "" && strings.TrimSpace(s) != "" && !strings.HasPrefix(strings.TrimSpace(s), "{") {
			t.Fatalf("textEvidence lost the text of %q", s)
		}
		_ = utf8.ValidString(s)
		checkAlternatives(t, s)
		checkResultPrefilters(t, s)
	})
}

// checkAlternatives: every split alternative, tried first without its
// leading word boundary, answers as its expression does, on the
// lower-cased text and on the text as it is.
func checkAlternatives(t *testing.T, s string) {
	t.Helper()
	for _, text := range []string{strings.ToLower(s), s} {
		var hits keyHits
		ruleKeys.scan(text, &hits)
		for i := range textRules {
			r := &textRules[i]
			if r.subAlts != nil {
				checkSubmatch(t, r, s, &hits)
			}
			for _, alts := range [][]alternative{r.alts, r.excludeAlts} {
				for i := range alts {
					if got, want := matchAny(alts[i:i+1], text, &hits), alts[i].re.MatchString(text); got != want {
						t.Fatalf("rule %s alternative %q on %q: %v, expression %v", r.name, alts[i].re, text, got, want)
					}
				}
			}
		}
	}
}

// checkSubmatch: a rule's leftmost match found from its alternatives is
// its expression's, groups included, on the texts the alternatives answer
// on (ASCII, or any text without the two folding runes for a rule whose
// alternatives are foldSafe); hits are the text's groups.
func checkSubmatch(t *testing.T, r *textRule, s string, hits *keyHits) {
	t.Helper()
	alts, exact := prefilterText(s)
	if !exact || !alts && !r.anyText {
		return
	}
	got := leftmostSubmatch(r.subAlts, r.re.NumSubexp(), s, asciiLower(s), hits)
	if want := r.re.FindStringSubmatch(s); !slices.Equal(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("rule %s on %q: from its alternatives %q, expression %q", r.name, s, got, want)
	}
}

// Every rule with a check is found from its alternatives, and those
// answer as the rule on texts around its forms.
func TestSubmatchAlternatives(t *testing.T) {
	for i := range textRules {
		r := &textRules[i]
		if r.check != nil && r.re.String()[:4] == "(?i)" && r.subAlts == nil {
			t.Errorf("rule %s: not split", r.name)
		}
	}
	for _, s := range append(ruleTestTexts(),
		"weather-api request failed: 502 Bad Gateway", "Error: 503 x", "  error - 429 y", "status code: 404 and status 503,", "http/1.1 500)",
		"xstatus 503 status 504 ", "(400) then 502 bad gateway", "'404' 503 Service Unavailable", "code=500, error_code 429",
		"MCP error -32602: x", `{"code": -32601}`, "json-rpc error (-32000)", "xrpc error -32603 rpc error -32001", "Status 503: overloaded",
		"é status 503 ", "STATUS 503", "HTTP 429 Too Many Requests", "upstreamhttperror: 502", "xhttp 503 http 504",
		"xhttp 503 (404)", "") {
		var hits keyHits
		ruleKeys.scan(s, &hits)
		for i := range textRules {
			if r := &textRules[i]; r.subAlts != nil {
				checkSubmatch(t, r, s, &hits)
			}
		}
	}
}

// An alternative starting with a class is tried only at its bytes,
// anchored there: the same answer as the expression, match and groups.
func TestStartClass(t *testing.T) {
	for expr, eligible := range map[string]bool{
		`\b([1-5]\d\d)\s+(?:bad gateway|not found)\b`: true, `['"(]([1-5]\d\d)(?:\s|$)`: true, `\b\d+ validation errors? for\b`: true,
		`[ab]?x`: false, `xy[ab]`: false, `(?:a|bc)d`: false, `[é]x`: false, `\b(?:ab|c)`: false, `(?:a|[bc])d`: true,
	} {
		sc := newStartClass(expr)
		if (sc != nil) != eligible {
			t.Errorf("newStartClass(%q) = %v", expr, sc != nil)
			continue
		}
		if sc == nil {
			continue
		}
		re := regexp.MustCompile(expr)
		for _, s := range []string{"", "x", "502 bad gateway", "a502 bad gateway 404 not found", "(503) '404 ", "'5021 (404)", "7 validation errors for x",
			"x7 validation errors for y, 12 validation error for z", "_404 not found", "é404 not found", "404  not found!"} {
			if got, want := sc.leftmost(s), re.FindStringSubmatchIndex(s); !slices.Equal(got, want) || sc.matches(s) != (want != nil) {
				t.Errorf("%q on %q: from its class %v, expression %v", expr, s, got, want)
			}
		}
	}
}

// Trying an alternative without its leading word boundary first is an
// optimisation: it must never change an answer.
func TestAlternativeWithoutBoundary(t *testing.T) {
	loose := 0
	for _, r := range textRules {
		for _, a := range r.alts {
			if a.loose != nil {
				loose++
			}
		}
	}
	if loose == 0 {
		t.Fatal("no alternative has a prefix to search from")
	}
	texts := append(ruleTestTexts(), "x_context length exceeded", "context", "pcontext window exceeded; context window exceeded",
		"(context window limit)", "\u00e9context length exceeded", "contextcontext length exceeded", "")
	for _, s := range texts {
		checkAlternatives(t, s)
	}
	// Expressions of the form, and a text matching only without the \b.
	for expr, text := range map[string]string{
		`\bcontext[ _-]?window\b`: "xcontext-window",
		`\bno\s+such`:             "uno such",
		`\b(?:ab|cd)e`:            "xcde",
		`\b(?:a|[bc])d`:           "",
		`context\b`:               "",
	} {
		res := withoutLeadingBoundary(expr)
		matches := slices.ContainsFunc(res, func(l string) bool { return regexp.MustCompile(l).MatchString(text) })
		if (res != nil) != (text != "") || (res != nil && (!matches || regexp.MustCompile(expr).MatchString(text))) {
			t.Errorf("withoutLeadingBoundary(%q) = %v", expr, res)
		}
	}
}

// ruleTestTexts are the held-out phrasings and the near misses.
func ruleTestTexts() []string {
	var texts []string
	for _, tc := range heldOutPhrasings {
		texts = append(texts, tc.text)
		// The same phrasing in a text that is not all ASCII.
		texts = append(texts, "« "+tc.text+" » é", strings.ReplaceAll(tc.text, " ", " "))
	}
	return append(texts, nearMisses...)
}

// isASCII and asciiLower, which read 8 bytes at a time, answer as their
// byte-at-a-time definitions.
func FuzzASCIIWords(f *testing.F) {
	for _, s := range []string{"", "abc", "Hello, World", "all lower case text here", "lower lower lowerZ", "@[`{AZaz", "é lower", "lower case é", "0123456789abcdef\x7f\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ascii := true
		want := []byte(s)
		for i := range want {
			if want[i] >= 0x80 {
				ascii = false
			}
			if 'A' <= want[i] && want[i] <= 'Z' {
				want[i] += 'a' - 'A'
			}
		}
		if isASCII(s) != ascii {
			t.Fatalf("isASCII(%q) = %v", s, !ascii)
		}
		if got := asciiLower(s); got != string(want) {
			t.Fatalf("asciiLower(%q) = %q, want %q", s, got, want)
		}
	})
}

// A text lowered into reused room reads as one lowered into a copy of its
// own, whatever the texts before it left there (longer, shorter, upper-
// or lower-case).
func TestClassifyTextInReusedScratch(t *testing.T) {
	var texts []string
	for _, tc := range heldOutPhrasings {
		texts = append(texts, tc.text, strings.ToUpper(tc.text))
	}
	if len(texts) < 10 {
		t.Fatalf("only %d texts", len(texts))
	}
	var scratch []byte
	for _, order := range []int{1, -1} {
		for k := range texts {
			s := texts[k]
			if order < 0 {
				s = texts[len(texts)-1-k]
			}
			f, ok := classifyTextIn(s, true, &scratch)
			wf, wok := classifyTextWith(s, true)
			if f != wf || ok != wok {
				t.Fatalf("classifyTextIn(%q) with reused room = %+v, %v; with its own copy %+v, %v", s, f, ok, wf, wok)
			}
		}
	}
	if cap(scratch) == 0 {
		t.Fatal("no text was lowered into the room: the test reads nothing")
	}
}
