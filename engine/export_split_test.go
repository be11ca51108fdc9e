package engine

// SharesGranted reports whether two override decisions hold one copy of
// their set.
func SharesGranted(a, b *GrantDecision) bool {
	return a.canon != nil && a.canon == b.canon && a.granted == b.granted
}

// CanonValues is the number of shared values the revision holds.
func (r *Revision) CanonValues() int { return r.canon.len() }
