package classifier

import "testing"

func TestConstraintSet(t *testing.T) {
	s := newConstraintSet([]string{"CONFIDENTIAL", "  ", "", "https://internal.example/"})
	if len(s.lower) != 2 {
		t.Fatalf("blank constraints kept: %q", s.orig)
	}
	cases := []struct {
		text string
		want string
	}{
		{"This is confidential.", "CONFIDENTIAL"},
		{"see HTTPS://Internal.Example/wiki", "https://internal.example/"},
		{"public answer", ""},
		{"", ""},
		{"confidentia", ""},
	}
	for _, tc := range cases {
		got, ok := s.violated(tc.text)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%q: got %q %v, want %q", tc.text, got, ok, tc.want)
		}
	}
	var empty constraintSet
	if _, ok := empty.violated("anything"); ok {
		t.Error("empty set matched")
	}
}
