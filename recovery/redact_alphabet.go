package recovery

// Redacting texts of a known alphabet. A trace's own session id
// ("trace:" and the trace id in hex) is new with every trace, so the memo
// never serves it, and Redact looked for every pattern's literals in each
// one. Which patterns a text can need depends only on the bytes it may
// hold: for an alphabet they are sorted out once.

// alphabetRedactor is Redact for texts whose bytes all lie in one set.
type alphabetRedactor struct {
	r *Redactor
	// set is the alphabet's bytes; patterns indexes the patterns of r a
	// text of them may need (mayNeed): for such a text mayMatchIn is
	// false for every other one.
	set      byteSet
	patterns []int
}

// over returns Redact for texts of alphabet's bytes.
func (r *Redactor) over(alphabet string) *alphabetRedactor {
	a := &alphabetRedactor{r: r}
	ascii := a.set.addString(alphabet)
	for i := range r.patterns {
		if r.patterns[i].mayNeed(&a.set, ascii) {
			a.patterns = append(a.patterns, i)
		}
	}
	return a
}

// mayNeed reports whether a text whose bytes are in set (all ASCII when
// ascii) can make mayMatchIn true: mayMatchIn's answer with only the set
// known. A subset of set holds fewer literals still.
func (p *secretPattern) mayNeed(set *byteSet, ascii bool) bool {
	if len(p.need) == 0 || (p.fold && !ascii) {
		return true
	}
	for _, lit := range p.need {
		if set.mayHold(lit, p.fold) {
			return true
		}
	}
	return false
}

// subsetOf reports whether every byte of b is in o.
func (b *byteSet) subsetOf(o *byteSet) bool {
	return b[0]&^o[0]|b[1]&^o[1]|b[2]&^o[2]|b[3]&^o[3] == 0
}

// Redact is a.r.Redact(s). A text with a byte outside the alphabet, or
// one that a pattern changes (its bytes are then no longer the text's),
// is redacted by a.r.Redact itself.
func (a *alphabetRedactor) Redact(s string) string {
	var set byteSet
	ascii := set.addString(s)
	if !set.subsetOf(&a.set) {
		return a.r.Redact(s)
	}
	for _, i := range a.patterns {
		if p := &a.r.patterns[i]; p.mayMatchIn(s, ascii, &set) && p.redact(s) != s {
			return a.r.Redact(s)
		}
	}
	return redactCardNumbers(s)
}

// textOnce is a.r.textOnce(s).
func (a *alphabetRedactor) textOnce(s string) string {
	if a.r.maxLen >= 0 && len(s) > a.r.maxLen+redactSlack {
		return a.r.textOnce(s)
	}
	return a.r.Truncate(a.Redact(s))
}
