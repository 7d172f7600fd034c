package classifier

import (
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var decodeArgsSeeds = []string{
	`{"city":"Paris"}`, ` { "city" : "Paris" , "n" : [1, -2.5e3, 0, true, false, null, {}] } `,
	`{"amount":100,"to":"EUR"}`, `"{\"amount\":100,\"to\":\"EUR\"}"`, `{"q":"caf\u00e9"}`, `{"q":"café"}`,
	`{"q":"\xff"}`, `{"a":1,"a":2}`, `[]`, `{}`, `1 2`, `{"a":1}{}`, `01`, `-`, `-0`, `1.`, `1e`, `1e+5`, `.5`,
	`{"a":}`, `{"a" 1}`, `{,}`, `[1,]`, `{"a":1,}`, `tru`, `truex`, `nul`, `null`, "{\"a\":\"x\ty\"}",
	`{"a":1e999}`, `"abc`, ``, ` `, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
}

// decodeArgs gives what jsonschema.UnmarshalJSON gives (the same value,
// or an error where it fails) on any text.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range decodeArgsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, gotErr := decodeArgs(s)
		want, wantErr := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeArgs(%q) = %#v, %v; want %#v, %v", s, got, gotErr, want, wantErr)
		}
	})
}

// The plain decoder reads the arguments tools are usually called with
// (else FuzzDecodeArgs would hold only the fallback), and gives up on
// what it does not read itself.
func TestPlainDecoderReads(t *testing.T) {
	for _, s := range []string{`{"city":"Paris"}`, ` { "city" : "Paris" , "n" : [1, -2.5e3, 0, true, false, null, {}] } `, `{"q":"café"}`, `[]`, `-0`, `1e+5`} {
		d := plainDecoder{plainJSON{src: s}}
		if _, ok := d.value(0); !ok {
			t.Errorf("plain decoder gave up on %q", s)
		}
	}
	for _, s := range []string{`{"q":"caf\u00e9"}`, `{"q":"\xff"}`, "{\"a\":\"x\ty\"}", `01x`, `{"a":}`, `[1,]`, `tru`} {
		d := plainDecoder{plainJSON{src: s}}
		if _, ok := d.value(0); ok && d.pos == len(s) {
			t.Errorf("plain decoder read %q", s)
		}
	}
}
