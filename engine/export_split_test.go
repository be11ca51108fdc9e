package engine

// SharesGranted reports whether two override decisions hold one copy of
// their set.
func SharesGranted(a, b *GrantDecision) bool {
	return a.canon != nil && a.canon == b.canon && a.granted == b.granted
}

// CanonValues is the number of shared values the revision holds.
func (r *Revision) CanonValues() int { return r.canon.len() }

// Preloaded is the number of values the split residual of c holds.
func (r *Revision) Preloaded(c *Caller) int {
	sg := r.split()
	if sg == nil {
		return -1
	}
	res := sg.res.Get(appendFingerprint(nil, c))
	if res == nil {
		return 0
	}
	return len(res.base.Load().vals)
}
