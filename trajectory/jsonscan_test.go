package trajectory

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var scanCases = []string{
	``, ` `, `[]`, ` [ ] `, `[1]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a":1}`, `{"a" 1}`, `{"a":}`, `{,}`, `{"a":1,}`,
	`"x"`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01b\"", "\"tab\tin\"", `"unterminated`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `-12.5e10`, `1.2.3`, `true`, `tru`, `truex`, `null`, `nul`, `false`,
	`[{"role":"user","parts":[{"type":"text","content":"hi"}]},{"role":"assistant"}]`, `[[1,[2,[3]]],{"a":[{}]}]`,
	`[1]x`, `[1]]`, "[\"\xff\xfe\"]", `["a\"b\\"]`, `["abcdefgh\"ijklmnop"]`, `["abcdefghijklmnop\\"]`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 100) + strings.Repeat("]", 100),
	// Strings past str's first words (its search for the closing quote).
	`["` + longText + `"]`, `["` + longText + `\"]`, `["` + longText + `\"x"]`, `["` + longText + `\\"]`,
	`["` + longText + `\u00e9` + longText + `"]`, `["` + longText + `\u00"]`, `["` + longText + `\q"]`,
	"[\"" + longText + "\x1f" + longText + "\"]", "[\"" + longText + "\x7f\"]", `["` + longText + `\`, `["` + longText,
	`["` + longText + strings.Repeat(`\"a`, 9) + `"]`, `"` + longText + `\`, `"` + longText + `\"`,
}

// longText is longer than the words str checks before it searches for the
// closing quote.
const longText = "abcdefghijklmnopqrstuvwxyz0123456789"

func checkScan(t *testing.T, s string) {
	t.Helper()
	assert.Equal(t, json.Valid([]byte(s)), validJSON(s), "validJSON(%q)", s)
	elems, ok := arrayElements(s, nil)
	var raw []json.RawMessage
	err := json.Unmarshal([]byte(s), &raw)
	assert.Equal(t, err == nil && raw != nil, ok, "arrayElements(%q)", s)
	if err == nil && ok {
		require.Len(t, elems, len(raw), "%q", s)
		for i, e := range elems {
			assert.Equal(t, string(raw[i]), s[e.start:e.end], "%q element %d", s, i)
		}
	}
}

func TestJSONScanMatchesEncodingJSON(t *testing.T) {
	for _, s := range scanCases {
		checkScan(t, s)
	}
}

// FuzzJSONScan checks the scanner against encoding/json on any input: the
// same texts are valid, and the same array elements are found.
func FuzzJSONScan(f *testing.F) {
	fuzzStrings(f, scanCases, checkScan)
}

func BenchmarkArrayElements(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 2000 {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_0123456789abcdef","response":"{\"status\":\"ok\",\"order\":{\"id\":\"A-1\",\"items\":[{\"sku\":\"SKU-1\",\"qty\":1}]}}"}]}`)
	}
	sb.WriteString("]")
	s := sb.String()
	b.SetBytes(int64(len(s)))
	var elems []elemRange
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			elems, _ = arrayElements(s, elems[:0])
		}
	})
	b.Run("encoding_json_valid", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			_ = json.Valid([]byte(s))
		}
	})
}

// skipValidStringRef is skipValidString as it was before its word-at-a-time
// search: the next quote by strings.IndexByte, escaped when an odd run of
// backslashes precedes it.
func skipValidStringRef(s string, i int) int {
	start := i + 1
	for i = start; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		k := i
		for k > start && s[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
	return len(s)
}

var skipStringCases = []string{
	`""`, `"a"`, `"abcdefgh"`, `"abcdefghi"`, `"\\"`, `"\""`, `"abcdefg\"hij"`, `"abcdefgh\\\\"x`, `"\`, `"ab\`,
	`"` + strings.Repeat(`a\"`, 20) + `"`, `"` + strings.Repeat("abcdefgh", 5) + `\\"`, `"` + strings.Repeat(`\\`, 17) + `"`,
	`{"a":"b","c\"":"d\\","e":["` + strings.Repeat("x", 40) + `"]}`,
}

// FuzzSkipValidString holds skipValidString to its reference from every
// quote of any text, valid JSON or not.
func FuzzSkipValidString(f *testing.F) {
	for _, s := range append(skipStringCases, scanCases...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i := 0; i < len(s); i++ {
			if s[i] == '"' {
				if got, want := skipValidString(s, i), skipValidStringRef(s, i); got != want {
					t.Fatalf("skipValidString(%q, %d) = %d, want %d", s, i, got, want)
				}
			}
		}
	})
}

// fuzzStrings seeds f with seeds and fuzzes check on any string: the
// shape of the package's fuzz tests that hold a fast path to its reference.
func fuzzStrings(f *testing.F, seeds []string, check func(*testing.T, string)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(check)
}

// FuzzPlainStringEnd holds plainStringEnd to what it stands for: from every
// quote of any text, either 0 (a backslash or non-ASCII byte comes first,
// or no quote closes) or skipValidString's end, with a literal that is its
// own text.
func FuzzPlainStringEnd(f *testing.F) {
	for _, s := range append(skipStringCases, scanCases...) {
		f.Add(s)
	}
	f.Add(`"abcdefgh\u00e9"`)
	f.Add("\"abcdefghij\xc3\xa9\"")
	f.Fuzz(func(t *testing.T, s string) {
		for i := 0; i < len(s); i++ {
			if s[i] != '"' {
				continue
			}
			e := plainStringEnd(s, i)
			j := i + 1
			for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] < 0x80 {
				j++
			}
			if j < len(s) && s[j] == '"' {
				require.Equal(t, j+1, e, "plainStringEnd(%q, %d)", s, i)
				require.Equal(t, skipValidString(s, i), e, "%q, %d", s, i)
				require.Equal(t, jsonStringText(s[i:e]), s[i+1:e-1], "%q, %d", s, i)
			} else {
				require.Zero(t, e, "plainStringEnd(%q, %d)", s, i)
			}
		}
	})
}
