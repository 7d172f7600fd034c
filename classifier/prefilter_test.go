package classifier

import "testing"

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
