package classifier

import (
	"testing"
	"unsafe"
)

// ClassifyCall keeps a failed call's text findings, the next ClassifyCall
// and Classify read them, Classify takes them; a text read at an address
// and length kept for another text is classified again.
func TestSharedTexts(t *testing.T) {
	c := mustNew(t, Options{})
	buf := []byte("weather-api request failed: 503 Service Unavailable")
	text := unsafe.String(&buf[0], len(buf))
	want, wantOK := classifyText(text)
	if !wantOK {
		t.Fatal("the test text is not classified")
	}
	keep := memo{shared: c.texts, mode: resultsKeep}
	if f, ok := keep.classifySharedText(text); f != want || ok != wantOK {
		t.Fatalf("keep: %+v %v, want %+v", f, ok, want)
	}
	h := c.texts.hash(text)
	if f, ok, hit := c.texts.get(text, h, false); !hit || f != want || !ok {
		t.Fatalf("not kept: %+v %v %v", f, ok, hit)
	}
	// The same address and length holding another text.
	copy(buf, "weather-api request failed: xyz Service Available!!")
	other, otherOK := classifyText(text)
	if other == want && otherOK == wantOK {
		t.Fatal("the changed text classifies as the first")
	}
	take := memo{shared: c.texts, mode: resultsTake}
	if f, ok := take.classifySharedText(text); f != other || ok != otherOK {
		t.Fatalf("changed text: %+v %v, want %+v %v", f, ok, other, otherOK)
	}
	copy(buf, "weather-api request failed: 503 Service Unavailable")
	if f, ok := take.classifySharedText(text); f != want || ok != wantOK {
		t.Fatalf("take: %+v %v, want %+v", f, ok, want)
	}
	if _, _, hit := c.texts.get(text, h, false); hit {
		t.Fatal("Classify did not take the entry")
	}
}
