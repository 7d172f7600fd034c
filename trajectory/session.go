package trajectory

// WithSessionKeys names the attributes that hold a run's session id, in
// order of preference (a collector's configured session attributes): Build
// sets Run.SessionKey to the first of them found on the run's root span,
// else on its other spans (in the order of Run.SpanIDs), else on the
// resource of the root (or of the run's first span when the root never
// arrived). May be given several times; the keys add up. Build only
// reads keys.
func WithSessionKeys(keys ...string) Option {
	return func(o *buildOptions) {
		if o.sessionKeys == nil {
			// The caller's keys themselves, not a copy made on every
			// Build (the processor passes the same keys to each); capped,
			// so that keys added by another option are appended to a copy.
			o.sessionKeys = keys[:len(keys):len(keys)]
			return
		}
		o.sessionKeys = append(o.sessionKeys, keys...)
	}
}

// sessionKey reads Run.SessionKey from the run's spans. members are in
// Run.SpanIDs order; head is the root when rootFound.
func (b *runBuilder) sessionKey(r *Run, members []int32, head int32, rootFound bool) {
	if len(b.sessionKeys) == 0 || len(members) == 0 {
		return
	}
	res := b.nodes[members[0]].c.res
	if rootFound {
		res = b.nodes[head].c.res
	}
	for _, k := range b.sessionKeys {
		if rootFound {
			if s := attrStr(b.nodes[head].c.attrs, k); s != "" {
				r.SessionKey = s
				return
			}
		}
		for _, i := range members {
			if rootFound && i == head {
				continue
			}
			if s := attrStr(b.nodes[i].c.attrs, k); s != "" {
				r.SessionKey = s
				return
			}
		}
		if s := attrStr(anyAttrs(res.Attributes()), k); s != "" {
			r.SessionKey = s
			return
		}
	}
}
