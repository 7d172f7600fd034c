package classifier

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

func TestCanonicalArgs(t *testing.T) {
	eq := [][2]string{
		{`{"b":1,"a":"x"}`, `{ "a" : "x", "b" : 1 }`},
		{`{"a":{"d":1,"c":2}}`, "{\n\"a\": {\"c\":2, \"d\":1}\n}"},
		{``, `{}`},
		{`"{\"a\":1}"`, `{"a":1}`},
		{`{"n":1.0}`, `{"n":1.0}`},
	}
	for _, p := range eq {
		if a, b := canonicalArgs(p[0]), canonicalArgs(p[1]); a != b {
			t.Errorf("%s vs %s: %s != %s", p[0], p[1], a, b)
		}
	}
	ne := [][2]string{
		{`{"a":1}`, `{"a":2}`},
		{`{"n":1}`, `{"n":1.0}`}, // exact numbers are kept
		{`{"a":"x"`, `{"a":"y"`},
	}
	for _, p := range ne {
		if a, b := canonicalArgs(p[0]), canonicalArgs(p[1]); a == b {
			t.Errorf("%s vs %s: both %s", p[0], p[1], a)
		}
	}
}

func calls(specs ...string) []loopCall {
	out := make([]loopCall, len(specs))
	for i, s := range specs {
		failed := false
		if s[0] == '!' {
			failed, s = true, s[1:]
		}
		var name, args string
		fmt.Sscanf(s, "%s %s", &name, &args)
		out[i] = newLoopCall(name, args, failed, i, i)
	}
	return out
}

func TestDetectLoop(t *testing.T) {
	cases := []struct {
		name  string
		calls []loopCall
		want  bool
	}{
		{"three equal", calls(`a {"x":1}`, `a {"x":1}`, `a {"x":1}`), true},
		{"key order does not matter", calls(`a {"x":1,"y":2}`, `a {"y":2,"x":1}`, `a {"x":1,"y":2}`), true},
		{"spread within window", calls(`a {"x":1}`, `b {}`, `a {"x":1}`, `c {}`, `d {}`, `a {"x":1}`), true},
		{"spread beyond window", calls(`a {"x":1}`, `b {}`, `c {}`, `a {"x":1}`, `d {}`, `e {}`, `f {}`, `a {"x":1}`), false},
		{"different arguments", calls(`a {"x":1}`, `a {"x":2}`, `a {"x":3}`, `a {"x":4}`), false},
		{"two only", calls(`a {"x":1}`, `a {"x":1}`), false},
		// retries right after an error are not loop steps
		{"retries after errors", calls(`!a {"x":1}`, `!a {"x":1}`, `a {"x":1}`), false},
		{"retries then repeats", calls(`!a {"x":1}`, `a {"x":1}`, `a {"x":1}`, `a {"x":1}`), true},
	}
	for _, tc := range cases {
		_, got := detectLoop(tc.calls, 3, 6, 0)
		if got != tc.want {
			t.Errorf("%s: got %v want %v", tc.name, got, tc.want)
		}
	}
}

func TestDetectLoopSimilarity(t *testing.T) {
	cs := calls(`search {"q":"revenue_Q1"}`, `search {"q":"revenue_for_Q1"}`, `search {"q":"revenue_of_Q1"}`)
	if _, ok := detectLoop(cs, 3, 6, 0); ok {
		t.Fatal("exact mode matched different arguments")
	}
	if _, ok := detectLoop(cs, 3, 6, 0.8); !ok {
		t.Fatal("similar arguments not matched at 0.8")
	}
	far := calls(`search {"q":"revenue"}`, `search {"q":"weather in Paris"}`, `search {"q":"flights"}`)
	if _, ok := detectLoop(far, 3, 6, 0.8); ok {
		t.Fatal("dissimilar arguments matched")
	}
}

func TestDetectLoopLargeInputs(t *testing.T) {
	// Long argument strings are bounded, so similarity stays cheap.
	big := make([]byte, 100000)
	for i := range big {
		big[i] = 'x'
	}
	arg := `{"q":"` + string(big) + `"}`
	proto := newLoopCall("t", arg, false, 0, 0)
	cs := make([]loopCall, 0, 2000)
	for i := range 2000 {
		// Rotating tools, each call similar to its predecessor's arguments.
		c := proto
		c.name, c.pos, c.callIx = fmt.Sprintf("t%d", (i/2)%7), i, i
		cs = append(cs, c)
	}
	if len(cs[0].args.prefix()) > maxCanonicalLen {
		t.Fatalf("compared arguments not bounded: %d", len(cs[0].args.prefix()))
	}
	// Long arguments that differ only past the bound are not equal.
	a := newLoopCall("t", `{"q":"`+string(big)+`a"}`, false, 0, 0)
	b := newLoopCall("t", `{"q":"`+string(big)+`b"}`, false, 1, 1)
	if a.args == b.args {
		t.Fatal("arguments differing at the end compared equal")
	}
	// Equal canonical forms are equal identities, short or long; a short
	// form never equals a long one.
	if c := newLoopCall("t", ` {"q": "`+string(big)+`a"}`, false, 2, 2); c.args != a.args {
		t.Fatal("equal long arguments compared different")
	}
	if x, y := newLoopCall("t", `{"b":1,"a":2}`, false, 0, 0), newLoopCall("t", `{"a":2, "b":1}`, false, 1, 1); x.args != y.args || x.args.long {
		t.Fatalf("equal short arguments: %+v, %+v", x.args, y.args)
	}
	if identityOf("") == identityOf(`{}`) || identityOf(`{"a":1}`) == identityOf(`{"a":2}`) {
		t.Fatal("different short arguments compared equal")
	}
	if _, ok := detectLoop(cs, 3, 6, 0.9); ok {
		t.Fatal("pairs of 7 tools rotating in a window of 6 are not a loop")
	}
}

func TestArgSimilarity(t *testing.T) {
	if s := argSimilarity("abc", "abc"); s != 1 {
		t.Errorf("equal: %v", s)
	}
	if s := argSimilarity("", "abc"); s != 0 {
		t.Errorf("empty: %v", s)
	}
	if s := argSimilarity("kitten", "sitting"); s < 0.5 || s > 0.6 {
		t.Errorf("kitten/sitting: %v", s)
	}
}

// volatileValue is what maskVolatile replaces, as an expression.
var volatileValue = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?|\b\d{1,2}:\d{2}(?::\d{2})?\b|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b|\b[0-9a-fA-F]{16,}\b|\b\d{10,}\b`)

var maskVolatileCases = []string{"", "no ids here", "at 10:42", "2024-01-02T03:04:05Z", "id deadbeefdeadbeef", "abcdefab-abcd-abcd-abcd-abcdefabcdef",
	"beefcafe", "cafebab", `{"q":"weather in paris"}`, "order 1234567890", "ABCDEF12",
	"2024-01-02 03:04:05.123+02:00 and 2024-01-02T03:04+0200x 2024-01-02T03:04:5 2024-01-02T03:04+02:0", "12:34:567 1:23 123:45 7:89:10a x1:23 1:23_",
	"deadbeefdeadbeefg deadbeefdeadbeef_ é0123456789abcdef0 0123456789é 012345678 01234567890123", "abcdefab-abcd-abcd-abcd-abcdefabcdef0 zabcdefab-abcd-abcd-abcd-abcdefabcdef",
	"2024-01-02T03:04:05.Z 99999-01-02T03:04Z 12:3456789012 \xff12:34\xff", "10:42:00-2024-01-02T03:04:05Z1234567890123",
}

// maskVolatile replaces what the expression replaces.
func TestMaskVolatile(t *testing.T) {
	for _, s := range maskVolatileCases {
		checkMaskVolatile(t, s)
	}
}

func checkMaskVolatile(t *testing.T, s string) {
	t.Helper()
	if got, want := maskVolatile(s), volatileValue.ReplaceAllString(s, "#"); got != want {
		t.Fatalf("maskVolatile(%q) = %q, want %q", s, got, want)
	}
}

func FuzzMaskVolatile(f *testing.F) {
	for _, s := range maskVolatileCases {
		f.Add(s)
	}
	f.Fuzz(checkMaskVolatile)
}

// TestLoopRingCountMatchesMap holds the ring scan (windows up to
// loopRingScan) to the counts map (wider windows) on random call streams:
// the same loop at the same call, or none.
func TestLoopRingCountMatchesMap(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 3))
	for range 2000 {
		threshold := 2 + rnd.IntN(4)
		window := threshold + rnd.IntN(8)
		scan := makeLoopDetector(threshold, window, 0)
		mapped := makeLoopDetector(threshold, window, 0)
		mapped.counts = map[loopKey]int{}
		for i := range 40 {
			name := []string{"", "a", "b"}[rnd.IntN(3)]
			c := newLoopCall(name, fmt.Sprintf(`{"x":%d}`, rnd.IntN(3)), rnd.IntN(4) == 0, i, i)
			c.byResult = rnd.IntN(5) == 0
			rs, oks := scan.add(c)
			rm, okm := mapped.add(c)
			if rs != rm || oks != okm {
				t.Fatalf("threshold %d window %d call %d: ring scan %v %v, counts map %v %v", threshold, window, i, rs, oks, rm, okm)
			}
			if c.failed {
				scan.lastFailed()
				mapped.lastFailed()
			}
		}
	}
}

// loopRuleCalls decodes fuzz bytes into calls: each call is 3 bytes (tool
// name, arguments or result, position step and failure).
func loopRuleCalls(data []byte) []call {
	names := []string{"", "a", "b", "c", "d"}
	args := []string{"", " ", `{"x":1}`, `{ "x": 1 }`, `{"x":2}`, `result:z`, `{"y":[1,2]}`, "\t", `{"x":1,"x":2}`}
	results := []string{"", "ok 12:30", "ok 09:15", "err", `{"id":"0123456789abcdef0123"}`}
	var cs []call
	pos := 0
	for i := 0; i+2 < len(data); i += 3 {
		c := call{name: names[int(data[i])%len(names)], pos: pos}
		a := int(data[i+1])
		c.args = args[a%len(args)]
		if r := (a / len(args)) % (len(results) + 1); r > 0 {
			c.result = &trajectory.ToolResult{Content: results[r-1]}
		}
		c.failed = data[i+2]&1 != 0
		pos += int(data[i+2]>>1) % 3 // equal positions, and calls out of order below
		if data[i+2]&0x80 != 0 && pos > 0 {
			c.pos = pos - 1
		}
		cs = append(cs, c)
	}
	return cs
}

// FuzzLoopRule holds loopCallsOf's shortcut (calls of a tool called fewer
// than threshold times are not identified) to identifying every call: the
// same loop at the same call, or none, and the same undecided answer, for
// thresholds, windows and similarities.
func FuzzLoopRule(f *testing.F) {
	f.Add([]byte{1, 2, 0, 1, 3, 0, 1, 2, 0, 2, 0, 0})
	f.Add([]byte{1, 0, 1, 1, 0, 0, 1, 0, 0, 0, 9, 0, 0, 10, 0, 0, 9, 0})
	f.Add([]byte{1, 2, 1, 1, 2, 1, 1, 2, 0, 1, 2, 0, 1, 2, 0})
	f.Add([]byte{2, 1, 0x80, 2, 5, 0x82, 3, 6, 4, 2, 6, 0, 3, 6, 0x81, 2, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		cs := loopRuleCalls(data)
		for threshold := 2; threshold <= 4; threshold++ {
			for _, window := range []int{threshold, 6, 40} {
				for _, sim := range []float64{0, 0.7} {
					fast := loopCallsOf(nil, nil, cs, threshold, false)
					ref := loopCallsOf(nil, nil, cs, threshold, true)
					rf, okf, uf, _ := runLoopRule(nil, fast, threshold, window, sim)
					rr, okr, ur, _ := runLoopRule(nil, ref, threshold, window, sim)
					if rf != rr || okf != okr || uf != ur {
						t.Fatalf("threshold %d window %d similarity %v: shortcut %+v %v %v, every call identified %+v %v %v",
							threshold, window, sim, rf, okf, uf, rr, okr, ur)
					}
				}
			}
		}
	})
}

// TestLoopRuleShortcutFinds: the fuzz inputs above find loops and
// undecided runs, so that FuzzLoopRule compares more than two nothings.
func TestLoopRuleShortcutFinds(t *testing.T) {
	found, undecided := false, false
	rnd := rand.New(rand.NewPCG(5, 8))
	for range 3000 {
		data := make([]byte, 3*(2+rnd.IntN(12)))
		for i := range data {
			data[i] = byte(rnd.IntN(256))
		}
		cs := loopRuleCalls(data)
		_, ok, u, _ := runLoopRule(nil, loopCallsOf(nil, nil, cs, 3, false), 3, 6, 0)
		_, okr, ur, _ := runLoopRule(nil, loopCallsOf(nil, nil, cs, 3, true), 3, 6, 0)
		if ok != okr || u != ur {
			t.Fatalf("calls %+v: shortcut %v %v, reference %v %v", cs, ok, u, okr, ur)
		}
		found = found || ok
		undecided = undecided || u
	}
	if !found || !undecided {
		t.Fatalf("random calls found a loop %v, an undecided run %v", found, undecided)
	}
}

// canonicalArgs passes over decoding only the texts decoding rejects at
// their first byte: it answers as decoding every text would.
func TestCanonicalArgsSkipsOnlyWhatDecodingRejects(t *testing.T) {
	full := func(raw string) string {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return "{}"
		}
		if canon, ok := canonicalFast(raw); ok {
			return canon
		}
		return canonicalDecoded(raw)
	}
	skipped := 0
	for c := range 256 {
		for _, rest := range []string{"", `"a":1}`, `1, 2]`, `{"b":2,"a":1}`, "rue", "alse", "ull", "2.5", `x"`, ":{}"} {
			raw := string([]byte{byte(c)}) + rest
			if got, want := canonicalArgs(raw), full(raw); got != want {
				t.Fatalf("canonicalArgs(%q) = %q, decoding gives %q", raw, got, want)
			}
			if s := strings.TrimSpace(raw); s != "" && !mayOpenJSONValue(s[0]) {
				skipped++
			}
		}
	}
	for _, raw := range []string{`result:{"a":1}`, "result:plain text", `"{\"b\":1,\"a\":2}"`, "tru", "nul", "-", "-1", "[]", "{}"} {
		if got, want := canonicalArgs(raw), full(raw); got != want {
			t.Fatalf("canonicalArgs(%q) = %q, decoding gives %q", raw, got, want)
		}
	}
	if skipped == 0 {
		t.Fatal("no text passed over decoding: the test reads nothing")
	}
}
