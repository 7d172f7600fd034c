package trajectory

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Lists that extend, branch from, repeat or almost extend the lists read
// before scan to exactly what a scan of the whole list gives.
func TestInputListsResumeAsAWholeScan(t *testing.T) {
	pool := []string{
		`{"role":"user","content":"q"}`, `{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"ok ] , ["}`, `1`, `12`, `-3.5e2`, `"s"`, `null`, `[1,2]`, `{}`,
		`{"bad":}`, `{"role":"tool","content":"\u00e9\"x"}`,
	}
	seps := []string{",", ", ", " ,\n", ","}
	rnd := rand.New(rand.NewPCG(1, 2))
	var lists inputLists
	for round := 0; round < 3000; round++ {
		// A conversation grows by a few elements per list; now and then
		// it branches from an earlier list, changes a byte, or ends oddly.
		var elems []string
		var texts []string
		for n := 1 + rnd.IntN(3); n > 0; n-- {
			elems = append(elems, pool[rnd.IntN(len(pool))])
		}
		for step := 0; step < 6; step++ {
			var b strings.Builder
			b.WriteString("[")
			for i, e := range elems {
				if i > 0 {
					b.WriteString(seps[i%len(seps)])
				}
				b.WriteString(e)
			}
			switch rnd.IntN(10) {
			case 0:
				b.WriteString("] ")
			case 1:
				b.WriteString("") // not closed
			case 2:
				b.WriteString("]]")
			default:
				b.WriteString("]")
			}
			s := b.String()
			if rnd.IntN(12) == 0 && len(s) > 2 {
				k := 1 + rnd.IntN(len(s)-1)
				s = s[:k] + "x" + s[k+1:]
			}
			if rnd.IntN(8) == 0 && len(texts) > 0 {
				s = texts[rnd.IntN(len(texts))] // the same list again
			}
			texts = append(texts, s)
			want, wantOK := arrayElements(s, nil)
			got, gotOK := lists.elements(s)
			if gotOK != wantOK || (wantOK && !reflect.DeepEqual(got, want)) {
				t.Fatalf("%q: got %v %v, want %v %v", s, got, gotOK, want, wantOK)
			}
			// The lists kept to resume from still hold their own ranges
			// (they share arrays with the lists resumed from them).
			for _, p := range lists.lists {
				if kept, _ := arrayElements(p.s, nil); len(p.elems) > 0 && !reflect.DeepEqual(p.elems, kept) {
					t.Fatalf("kept list %q: ranges %v, want %v", p.s, p.elems, kept)
				}
			}
			elems = append(elems, pool[rnd.IntN(len(pool))])
			if rnd.IntN(5) == 0 && len(elems) > 1 {
				elems = elems[:len(elems)-1-rnd.IntN(len(elems)-1)] // branch from an earlier point
			}
		}
	}
	if lists.resumed < 1000 {
		t.Fatalf("only %d lists resumed: the test checks little", lists.resumed)
	}
}

// A chat loop's lists are resumed, not scanned whole.
func TestInputListsResumeAGrowingConversation(t *testing.T) {
	var lists inputLists
	s := `[{"role":"user","content":"q"}`
	for i := range 50 {
		s += `,{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c","content":"r"}`
		got, ok := lists.elements(s + "]")
		want, _ := arrayElements(s+"]", nil)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("turn %d: got %v, want %v", i, got, want)
		}
		if lists.resumed != i {
			t.Fatalf("turn %d: %d lists resumed", i, lists.resumed)
		}
	}
}

// Two lists branching from one kept list do not share the ranges they
// append: the first branch, extended later, still scans right (were the
// second branch's range written over the first's, the first would end
// inside its string, at a comma).
func TestInputListsBranchesKeepTheirRanges(t *testing.T) {
	var lists inputLists
	p := `[{"a":1},{"b":2},{"c":3}` // three ranges: room for a fourth in their array
	x, y := `{"x":"abc,d"}`, `{"x":"a"}`
	for _, s := range []string{p + `]`, p + `,` + x + `]`, p + `,` + y + `]`, p + `,` + x + `,{"z":3}]`} {
		got, ok := lists.elements(s)
		want, _ := arrayElements(s, nil)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %v %v, want %v", s, got, ok, want)
		}
	}
	if lists.resumed != 3 {
		t.Fatalf("%d lists resumed, want 3", lists.resumed)
	}
}

// Any list read after any other scans as a whole scan does.
func FuzzInputListsResume(f *testing.F) {
	f.Add(`[{"a":1},2`, `]`, `,3]`)
	f.Add(`[1`, `]`, `,{"b":"x,y"} ]`)
	f.Add(`["s\"",12`, `] `, `3]`)
	f.Add(`[[1,2]`, `]`, `  ,  null]`)
	f.Fuzz(func(t *testing.T, prefix, end1, rest string) {
		var lists inputLists
		for _, s := range []string{prefix + end1, prefix + rest, prefix + end1 + rest} {
			got, gotOK := lists.elements(s)
			want, wantOK := arrayElements(s, nil)
			if gotOK != wantOK || wantOK && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: got %v %v, want %v %v", s, got, gotOK, want, wantOK)
			}
		}
	})
}

// Wrapped lists that extend, branch from, repeat or almost extend the
// texts unwrapped before give exactly what unwrapping them whole gives.
func TestWrapperListsResumeAsAWholeScan(t *testing.T) {
	pool := []string{
		`{"role":"user","content":"q"}`, `{"lc":1,"id":["x","ToolMessage"],"kwargs":{"content":"ok ] , [","tool_call_id":"c1"}}`,
		`{"role":"tool","tool_call_id":"c1","content":"ok ] , ["}`, `1`, `12`, `-3.5e2`, `"s"`, `null`, `[1,2]`, `{}`,
		`{"bad":}`, `{"role":"tool","content":"\u00e9\"x"}`, `[{"role":"user"}]`,
	}
	wrappers := [][2]string{
		{`{"messages":[`, `]}`}, {`{"messages":[[`, `]]}`}, {`{"a":{"messages":[1]},"messages":[`, `]}`},
		{`[`, `]`}, {`{"Messages": [`, ` ] }`}, {`{"output":[`, `]}`}, {`{"messages":[`, `],"messages":[{"role":"x"}]}`},
		{`{"messages":{"messages":[`, `]}}`}, {`{"x":"messages","messages":[`, `],"y":2}`},
	}
	seps := []string{",", ", ", " ,\n", ","}
	rnd := rand.New(rand.NewPCG(3, 4))
	var mm messageMemo
	for round := 0; round < 3000; round++ {
		if round%7 == 0 {
			mm.reset()
		}
		w := wrappers[rnd.IntN(len(wrappers))]
		var elems, texts []string
		for n := 1 + rnd.IntN(3); n > 0; n-- {
			elems = append(elems, pool[rnd.IntN(len(pool))])
		}
		for step := 0; step < 6; step++ {
			var b strings.Builder
			b.WriteString(w[0])
			for i, e := range elems {
				if i > 0 {
					b.WriteString(seps[i%len(seps)])
				}
				b.WriteString(e)
			}
			switch rnd.IntN(10) {
			case 0:
				b.WriteString(w[1] + " ")
			case 1: // not closed
			case 2:
				b.WriteString(w[1] + "]")
			default:
				b.WriteString(w[1])
			}
			s := b.String()
			if rnd.IntN(12) == 0 && len(s) > 2 {
				k := 1 + rnd.IntN(len(s)-1)
				s = s[:k] + "x" + s[k+1:]
			}
			if rnd.IntN(8) == 0 && len(texts) > 0 {
				s = texts[rnd.IntN(len(texts))] // the same text again
			}
			if rnd.IntN(10) == 0 {
				w = wrappers[rnd.IntN(len(wrappers))] // another wrapper of the same messages
			}
			texts = append(texts, s)
			want := unwrapMessageList([]byte(s), 0)
			if got := mm.unwrapMessageList([]byte(s)); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: got %q, want %q", s, got, want)
			}
			elems = append(elems, pool[rnd.IntN(len(pool))])
			if rnd.IntN(5) == 0 && len(elems) > 1 {
				elems = elems[:len(elems)-1-rnd.IntN(len(elems)-1)] // branch from an earlier point
			}
		}
	}
	if mm.wrappers.skipped < 3000 {
		t.Fatalf("only %d elements skipped: the test checks little", mm.wrappers.skipped)
	}
}

// An object without a "messages" member holds no list, valid or not; one
// with it, or text that is not an object, may.
func TestMayHoldMessagesKey(t *testing.T) {
	for s, want := range map[string]bool{
		`{"output":[{"messages":[1]}]}`: false, `{}`: false, `{"a":"messages","b":{"messages":1}}`: false,
		`{"messages":[]}`: true, `{"a":1,"MESSAGES":2}`: true, `{"a":1,"me\u0073sages":2}`: true, `[1]`: true,
		`{"a":1 "messages":2}`: true, `{"a":}`: true, `{"a":1`: true,
	} {
		if got := mayHoldMessagesKey(s); got != want {
			t.Errorf("mayHoldMessagesKey(%q) = %v, want %v", s, got, want)
		}
		if !mayHoldMessagesKey(s) && unwrapMessageList([]byte(s), 0) != nil {
			t.Errorf("%q: no messages key, but a list", s)
		}
	}
}

// An element validated at one nesting is scanned again deeper down, where
// it may pass the depth limit, and one that ends in a number is scanned
// again where a digit may follow it.
func TestWrapperListsKeepDepthAndNumbers(t *testing.T) {
	// Valid as an element of a top-level list (nesting 1), too deep one
	// or two wrappers down.
	deep := `{"a":` + strings.Repeat("[", maxScanDepth-2) + strings.Repeat("]", maxScanDepth-2) + `}`
	for _, texts := range [][]string{
		{`[` + deep + `]`, `{"messages":{"messages":[` + deep + `]}}`, `{"messages":[` + deep + `]}`, `[` + deep + `]`},
		{`[{"a":1},2]`, `[{"a":1},23]`, `[{"a":1},2x]`},
	} {
		var mm messageMemo
		for _, s := range texts {
			want := unwrapMessageList([]byte(s), 0)
			if got := mm.unwrapMessageList([]byte(s)); !reflect.DeepEqual(got, want) {
				t.Fatalf("%.60q: got %d elements, want %d", s, len(got), len(want))
			}
		}
		if mm.wrappers.skipped == 0 {
			t.Fatalf("%.60q: nothing skipped", texts)
		}
	}
}
