package trajectory

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// fieldIndexRef is fieldIndex as it was: every name compared exactly, then
// with strings.EqualFold.
func fieldIndexRef(key string, names []string) int {
	for i, n := range names {
		if n == key {
			return i
		}
	}
	for i, n := range names {
		if strings.EqualFold(n, key) {
			return i
		}
	}
	return -1
}

// fieldLists are the field name lists the decoders match keys against.
var fieldLists = [][]string{metadataFields, messageFields, toolCallsField, finishReasonField, partFields, toolCallFields,
	{"name", "arguments"}, generationsFields, generationFields, messagesField, vercelToolOutputFields, resultErrorFlagsFields,
	mastraModelMetadataFields, mastraOutputFields, mastraInputFields, mastraRequestFields, mastraChunkFields,
	jsonErrorObjectFields, mcpEntityInputFields, mcpEntityOutputFields, tlEntityInputFields, {"output"}}

// TestFieldNamesASCII: fieldIndex skips names of another length for an
// ASCII key, which holds only for ASCII names.
func TestFieldNamesASCII(t *testing.T) {
	for _, l := range fieldLists {
		for _, n := range l {
			for i := 0; i < len(n); i++ {
				if n[i] >= utf8.RuneSelf {
					t.Fatalf("field name %q is not ASCII", n)
				}
			}
		}
	}
}

// FuzzFieldIndex holds fieldIndex and fieldSet.index to fieldIndexRef on
// every list.
func FuzzFieldIndex(f *testing.F) {
	for _, k := range []string{"role", "ROLE", "Role", "tool_calls", "TOOL_CALLS", "toolcallid", "toolCallID", "\u212a", "\u212aind",
		"ſession_id", "ſ", "name", "nAme", "", "x", "content\x00", "argumentſ", "lc_agent_name", "id", "ID", "Id",
		// Above 16 bytes the words do not cover the key: the same first
		// and last eight bytes as additional_kwargs.
		"additionXl_kwargs"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		for _, l := range fieldLists {
			if got, want := fieldIndex(key, l), fieldIndexRef(key, l); got != want {
				t.Fatalf("fieldIndex(%q, %q) = %d, want %d", key, l, got, want)
			}
			if got, want := newFieldSet(l).index(key), fieldIndexRef(key, l); got != want {
				t.Fatalf("fieldSet(%q).index(%q) = %d, want %d", l, key, got, want)
			}
		}
	})
}

// jsonStringTextRef is jsonStringText as it was: the backslash search
// and the UTF-8 check over the whole text.
func jsonStringTextRef(lit string) string {
	in := lit[1 : len(lit)-1]
	if strings.IndexByte(in, '\\') < 0 && utf8.ValidString(in) {
		return in
	}
	return unquoteJSON(lit)
}

// FuzzJSONStringText holds jsonStringText (one ASCII run pass first) to
// jsonStringTextRef on valid literals.
func FuzzJSONStringText(f *testing.F) {
	for _, s := range stringDecodeCases {
		f.Add(s)
	}
	for _, s := range []string{`"role"`, `"abcdefgh"`, `"abcdefghé"`, "\"abcdefgh\xff\"", `"abcdefgh\n"`, `"é\n"`, `"abcdefghijklmnopq\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc := jsonScanner{s: s}
		if !sc.at('"') || !sc.str() || sc.i != len(s) {
			return // jsonStringText is given valid literals
		}
		if got, want := jsonStringText(s), jsonStringTextRef(s); got != want {
			t.Fatalf("jsonStringText(%q) = %q, want %q", s, got, want)
		}
	})
}

// containsFoldASCIIRef is containsFoldASCII as it was: every place of s
// compared, upper-case ASCII letters lowered.
func containsFoldASCIIRef(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		j := 0
		for ; j < len(word); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != word[j] {
				break
			}
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

// FuzzContainsFoldASCII holds the word-at-a-time search to the byte loop
// for the words mayBeToolMessage looks for.
func FuzzContainsFoldASCII(f *testing.F) {
	for _, s := range []string{"", "tool", "TOOL", "xxxxxxxtool", "xxxxxxxxTooL", "toolxxxxxxxxxxxxfunction", "FUNCTIOn", "tttttttttttttoo",
		"tToOl", "\x54\x4f\x4f\x4c", "\xd4\xef\xef\xec", "t\x00ool", `{"role":"Tool"}`, "ttttttttfunctio", "functio"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range []string{"tool", "function", "t", "ab"} {
			if got, want := containsFoldASCII(s, w), containsFoldASCIIRef(s, w); got != want {
				t.Fatalf("containsFoldASCII(%q, %q) = %v, want %v", s, w, got, want)
			}
		}
	})
}
