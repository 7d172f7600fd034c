package classifier

import "strings"

const confConstraint = 0.85

// constraintSet holds the caller's forbidden strings, lower-cased once.
type constraintSet struct {
	orig  []string
	lower []string
}

func newConstraintSet(cs []string) constraintSet {
	var s constraintSet
	for _, c := range cs {
		if strings.TrimSpace(c) == "" {
			continue
		}
		s.orig = append(s.orig, c)
		s.lower = append(s.lower, strings.ToLower(c))
	}
	return s
}

// violated returns the first forbidden string found in text, compared
// case-insensitively.
func (s *constraintSet) violated(text string) (string, bool) {
	if len(s.lower) == 0 || text == "" {
		return "", false
	}
	lt := strings.ToLower(text)
	for i, c := range s.lower {
		if strings.Contains(lt, c) {
			return s.orig[i], true
		}
	}
	return "", false
}
