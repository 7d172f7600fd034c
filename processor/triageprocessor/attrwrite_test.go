package triageprocessor

import (
	"bytes"
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// attrKeys are the keys the fuzz target draws from: annotation keys (the
// shared ones among them), a span's own keys, and one key without the
// annotation prefix written as an annotation (never done today: the
// writer must then fall back to Put).
var attrKeys = []string{
	attrVerdict, attrFailureType, attrSignal, attrRule, attrReason, attrConfidence,
	attrRecovered, attrDecision, attrAttempt, attrRootMissing,
	"gen_ai.operation.name", "gen_ai.request.model", "http.response.status_code", "error.type",
}

// annotationsOf decodes data into a span's attributes and its incident and
// root annotations.
func annotationsOf(data []byte) (own, inc, root []annotation) {
	lists := [3]*[]annotation{&own, &inc, &root}
	for i := 0; i+1 < len(data); i += 2 {
		op, arg := data[i], data[i+1]
		list := lists[int(op>>6)%3]
		key := attrKeys[int(op&0x3f)%len(attrKeys)]
		if list != &own && op&0x3f == 0x3f {
			key = "unprefixed.key"
		}
		var a annotation
		switch arg % 5 {
		case 0:
			a = numAnn(key, float64(arg)/7)
		case 1:
			a = intAnn(key, int64(arg))
		case 2:
			a = boolAnn(key, arg&8 != 0)
		case 3:
			a = annotation{eval: &evaluation{label: key}}
		default:
			a = strAnn(key, fmt.Sprint("v", arg))
		}
		*list = append(*list, a)
	}
	return own, inc, root
}

func attrsDump(m pcommon.Map) []string {
	var out []string
	for k, v := range m.All() {
		out = append(out, fmt.Sprintf("%s=%s:%s", k, v.Type(), v.AsString()))
	}
	return out
}

// checkAttrWriter holds attrWriter.annotate to applyAnnotations (Put and
// Remove on the map, as before it existed): the same attributes in the
// same order. It reports whether the map was rebuilt (the fast path).
func checkAttrWriter(t *testing.T, data []byte) bool {
	own, inc, root := annotationsOf(data)
	want, got := pcommon.NewMap(), pcommon.NewMap()
	for _, a := range own {
		if a.eval == nil {
			a.apply(want)
			a.apply(got)
		}
	}
	applyAnnotations(want, inc, root)
	var w attrWriter
	fast := w.annotate(got, inc, root)
	g, wa := attrsDump(got), attrsDump(want)
	if fmt.Sprint(g) != fmt.Sprint(wa) {
		t.Fatalf("own %v inc %v root %v:\n got %v\nwant %v", own, inc, root, g, wa)
	}
	return fast
}

func FuzzAttrWriter(f *testing.F) {
	f.Add([]byte{0x0a, 4, 0x0b, 1, 0x40, 4, 0x41, 4, 0x42, 2, 0x44, 3, 0x80, 4, 0x81, 4, 0x84, 4, 0x85, 0,
		0x82, 4, 0x83, 1, 0x86, 4, 0x87, 2, 0x88, 4, 0x89, 4})
	f.Add([]byte{0x00, 4, 0x40, 4, 0x80, 4})
	f.Add([]byte{0x7f, 4, 0x80, 4})
	f.Fuzz(func(t *testing.T, data []byte) { checkAttrWriter(t, data) })
}

// TestAttrWriterMatchesPut runs the cases the fuzz target starts from and
// checks both paths are taken: spans without triage.* attributes rebuilt,
// spans with one (or an unprefixed annotation key) written with Put.
func TestAttrWriterMatchesPut(t *testing.T) {
	// root annotations of ten distinct keys (0x80..0x89: verdict to
	// root_missing), as strings.
	var roots []byte
	for k := byte(0); k < 10; k++ {
		roots = append(roots, 0x80+k, 4)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		data []byte
		fast bool
	}{
		// own attributes, incident annotations with a repeated key, root
		// annotations overriding the shared keys.
		{cat([]byte{0x0a, 4, 0x0b, 1, 0x40, 4, 0x41, 4, 0x42, 2, 0x41, 5, 0x44, 3}, roots), true},
		// only a root, with repeated keys and an evaluation.
		{cat([]byte{0x0c, 4}, roots, []byte{0x81, 1, 0x85, 3, 0x80, 0}), true},
		// few annotations: written with Put.
		{[]byte{0x0a, 4, 0x41, 4, 0x44, 1, 0x80, 4}, false},
		// the span already carries a triage.* key.
		{cat([]byte{0x00, 4, 0x0a, 4, 0x40, 4}, roots), false},
		// an annotation key without the prefix.
		{cat([]byte{0x0a, 4, 0x7f, 4}, roots), false},
	}
	for i, c := range cases {
		if fast := checkAttrWriter(t, c.data); fast != c.fast {
			t.Errorf("case %d: fast path %v, want %v", i, fast, c.fast)
		}
	}
}

// TestKeyBitsDistinct checks the claim keyBit's weights rest on: the
// annotation keys fall on distinct bits, so putting them looks through
// nothing.
func TestKeyBitsDistinct(t *testing.T) {
	keys := []string{
		attrVerdict, attrFailureType, attrSignal, attrRule, attrConfidence, attrEvidenceSpanID, attrReason,
		attrRecovered, attrRuleError, attrRootMissing, attrIncompleteReason, attrLate, attrAgent, attrService,
		attrTool, attrDecision, attrDecisionID, attrActionKind, attrActionDelayMS, attrActionHint,
		attrActionTarget, attrAttempt, attrMaxAttempts, attrPolicy, attrSessionID, attrInFlightDecisionID,
		attrPhase, attrEvidenceContent,
	}
	by := map[uint64]string{}
	for _, k := range keys {
		if other, ok := by[keyBit(k)]; ok {
			t.Errorf("%s and %s share a bit", k, other)
		}
		by[keyBit(k)] = k
	}
}
