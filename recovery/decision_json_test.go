package recovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// marshalled is the reference: the document as encoding/json writes it.
func marshalled(t testing.TB, d Decision) []byte {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// awkward are strings that exercise every escaping rule of encoding/json.
var awkward = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"é ü 日本語 🙂", "line\u2028sep\u2029para", "bad \xff utf-8 \xc3", "\xe2\x80", strings.Repeat("x", 600),
}

func TestDecisionJSONMatchesMarshal(t *testing.T) {
	base := Decision{
		Version: DecisionVersion, Phase: PhaseFinal, DecisionID: "0193b6f2-7c1e-7a6b-9c2d-1f2e3d4c5b6a",
		TraceID: testTrace.String(), SpanID: testSpan.String(), SessionID: "trace:" + testTrace.String(),
		Service: "svc", Agent: "agent", Tool: "search", FailureType: "tool_error", Confidence: 0.85,
		Evidence: []Evidence{{SpanID: testSpan, Signal: "http_status", Rule: "r", Reason: "HTTP 503"}, {Signal: "llm"}},
		Action:   Action{Kind: ActionRetry, DelayMS: 250, Hint: "hint", Target: "t", CheckpointID: "c", Subgoal: "s", Reason: "why"},
		Attempt:  2, MaxAttempts: 3, Policy: "tool_error.steps[0]:backoff_and_retry", Time: "2026-12-01T14:00:00.123456789Z",
	}
	cases := map[string]Decision{"typical": base}
	noEvidence := base
	noEvidence.Evidence = nil
	cases["nil evidence"] = noEvidence
	emptyEvidence := base
	emptyEvidence.Evidence = []Evidence{}
	cases["empty evidence"] = emptyEvidence
	withBreaker := base
	withBreaker.Breaker = &BreakerReport{Name: "b<1>", Key: "k&v", State: "half_open", Probe: true}
	cases["breaker"] = withBreaker
	inFlight := base
	inFlight.Phase, inFlight.Guard, inFlight.InFlightDecisionID = PhaseInFlight, "loop", "id-1"
	cases["in flight"] = inFlight
	for _, c := range []float64{0, 1, 0.1, 1e-7, 5e-324, 1.5e-6, 1e21, 123456789.125, -0.5, math.Copysign(0, -1)} {
		d := base
		d.Confidence = c
		cases[fmt.Sprint("confidence ", c)] = d
	}
	for i, s := range awkward {
		d := withBreaker
		d.Phase, d.SessionID, d.Agent, d.Policy, d.Time = s, s, s, s, s
		d.Evidence = []Evidence{{SpanID: pcommon.SpanID{byte(i), 0xab}, Signal: s, Rule: s, Reason: s}}
		d.Action = Action{Kind: ActionKind(s), DelayMS: -int64(i), Hint: s, Target: s, CheckpointID: s, Subgoal: s, Reason: s}
		d.Breaker = &BreakerReport{Name: s, Key: s, State: s}
		cases["awkward "+string(rune('a'+i))] = d
	}
	for name, d := range cases {
		got, err := d.JSON()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := marshalled(t, d); !bytes.Equal(got, want) {
			t.Errorf("%s: the hand-written document differs from json.Marshal's\n got %s\nwant %s", name, got, want)
		}
	}
}

func TestDecisionJSONRejectsWhatMarshalRejects(t *testing.T) {
	for _, c := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := (Decision{Confidence: c}).JSON(); err == nil {
			t.Errorf("confidence %v: no error (json.Marshal has one)", c)
		}
	}
}

func FuzzDecisionJSON(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, 0.5, int64(3), true)
	}
	f.Fuzz(func(t *testing.T, a, b string, conf float64, n int64, probe bool) {
		if math.IsNaN(conf) || math.IsInf(conf, 0) {
			return
		}
		d := Decision{
			Version: DecisionVersion, Phase: a, Guard: b, InFlightDecisionID: a, DecisionID: b, TraceID: a, SpanID: b,
			SessionID: a, Service: b, Agent: a, Tool: b, FailureType: a, Confidence: conf,
			Evidence: []Evidence{{Signal: a, Rule: b, Reason: a + b}, {SpanID: pcommon.SpanID{1}, Reason: b}},
			Action:   Action{Kind: ActionKind(a), DelayMS: n, Hint: b, Target: a, CheckpointID: b, Subgoal: a, Reason: b},
			Attempt:  int(n), MaxAttempts: int(-n), Policy: a + ":" + b, Time: b,
		}
		if probe {
			d.Breaker = &BreakerReport{Name: a, Key: b, State: a, Probe: probe}
		}
		got, err := d.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalled(t, d); !bytes.Equal(got, want) {
			t.Fatalf("differs from json.Marshal\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkDecisionJSON compares the hand-written document with
// json.Marshal's on a typical decision.
func BenchmarkDecisionJSON(b *testing.B) {
	d := Decision{
		Version: DecisionVersion, Phase: PhaseFinal, DecisionID: "0193b6f2-7c1e-7a6b-9c2d-1f2e3d4c5b6a",
		TraceID: testTrace.String(), SpanID: testSpan.String(), SessionID: "conversation-42", Service: "checkout-agent",
		Agent: "planner", Tool: "search_flights", FailureType: "tool_error", Confidence: 0.85,
		Evidence: []Evidence{{SpanID: testSpan, Signal: "http_status", Rule: "", Reason: "HTTP 503 from the flights API"}},
		Action:   Action{Kind: ActionRetry, DelayMS: 500, Hint: "retry the tool call with the same arguments"},
		Attempt:  1, MaxAttempts: 3, Policy: "tool_error.steps[0]:backoff_and_retry", Time: "2026-12-01T14:00:00.123456789Z",
	}
	b.Run("encoder=append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.JSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoder=encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(d); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// safe8 reports whether the 8 bytes of s are all jsonSafe, as
// appendJSONString tests them.
func safe8(s string) bool {
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return unsafe8(x)&highs8 == 0
}

// TestSafe8MatchesTable holds the eight-byte test of appendJSONString to
// the byte table: every byte value at every position among safe bytes,
// and every pair of byte values at two positions (a borrow from an
// unsafe byte must not hide, or fake, another).
func TestSafe8MatchesTable(t *testing.T) {
	safe := func(c byte) bool { return c < utf8.RuneSelf && jsonSafe[c] }
	for c := 0; c < 256; c++ {
		for p := 0; p < 8; p++ {
			b := []byte("abcdefgh")
			b[p] = byte(c)
			if got := safe8(string(b)); got != safe(byte(c)) {
				t.Fatalf("byte %#x at %d: safe8 %v", c, p, got)
			}
		}
	}
	for c := 0; c < 256; c++ {
		for d := 0; d < 256; d++ {
			b := []byte("a~ zZ09.")
			b[2], b[5] = byte(c), byte(d)
			if got := safe8(string(b)); got != (safe(byte(c)) && safe(byte(d))) {
				t.Fatalf("bytes %#x, %#x: safe8 %v", c, d, got)
			}
		}
	}
}

// TestSafePrefixMatchesTable holds safePrefix (its two-word rounds above
// all) to the byte table: strings of every length to 40 with one byte
// that is not safe at each position, and none.
func TestSafePrefixMatchesTable(t *testing.T) {
	ref := func(s string) int {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c >= utf8.RuneSelf || !jsonSafe[c] {
				return i
			}
		}
		return len(s)
	}
	for n := 0; n <= 40; n++ {
		base := []byte(strings.Repeat("a~ zZ09.", 5)[:n])
		if got := safePrefix(string(base)); got != n {
			t.Fatalf("safe string of %d bytes: safePrefix %d", n, got)
		}
		for p := 0; p < n; p++ {
			for _, c := range []byte{'"', '<', '\\', 0x1f, 0x80, 0xff} {
				b := append([]byte(nil), base...)
				b[p] = c
				if got, want := safePrefix(string(b)), ref(string(b)); got != want {
					t.Fatalf("%q: safePrefix %d, want %d", b, got, want)
				}
			}
		}
	}
}

// FuzzJSONString holds appendJSONString (its eight-byte skip above all) to
// encoding/json's encoding of the same string.
func FuzzJSONString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Add("0123456789abcdef<0123456789abcdef\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

// TestJSONFloatMatchesMarshal holds appendJSONFloat (its hundredths path
// above all) to encoding/json's encoding of the same number: every
// number of hundredths in [0, 1], its neighbouring doubles, and numbers
// between them.
func TestJSONFloatMatchesMarshal(t *testing.T) {
	var fs []float64
	for k := 0; k <= 100; k++ {
		f := float64(k) / 100
		fs = append(fs, f, math.Nextafter(f, 2), math.Nextafter(f, -1), f+0.001, f+0.005, f*0.999)
	}
	fs = append(fs, 0.85, 0.1+0.2, 1.0/3, math.Copysign(0, -1), 1e-7, 1e-300, 5e-324, 1.5, 2, 100, 1e21, -0.5)
	for i := 0; i < 1000; i++ {
		fs = append(fs, float64(i)/997, float64(i)/1000)
	}
	for _, f := range fs {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, f); !bytes.Equal(got, want) {
			t.Fatalf("%v (%#x): got %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
}
