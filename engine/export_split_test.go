package engine

import (
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/toolgate/toolgate/toolcall"
)

// SharesGranted reports whether two override decisions hold one copy of
// their set.
func SharesGranted(a, b *GrantDecision) bool {
	return a.canon != nil && a.canon == b.canon && a.granted == b.granted
}

// CanonValues is the number of shared values the revision holds.
func (r *Revision) CanonValues() int { return r.canon.len() }

// Preloaded is the number of values the split residual of c holds.
func (r *Revision) Preloaded(c *toolcall.Caller) int {
	sg := r.split()
	if sg == nil {
		return -1
	}
	res := sg.res.Get(c.AppendFingerprint(nil))
	if res == nil {
		return 0
	}
	return len(res.base.Load().vals)
}

// PreloadedSets are the sets among the values the split residual of c
// holds: shared with every evaluation of c that starts from now on.
func (r *Revision) PreloadedSets(c *toolcall.Caller) []ast.Set {
	res := r.split().res.Get(c.AppendFingerprint(nil))
	if res == nil {
		return nil
	}
	var sets []ast.Set
	for _, p := range res.base.Load().vals {
		if p.val != nil {
			if s, ok := p.val.Value.(ast.Set); ok {
				sets = append(sets, s)
			}
		}
	}
	return sets
}

// HasRowFlags reports whether an override decision answers Allowed from
// flags per row (precompute) rather than from its set.
func HasRowFlags(d *GrantDecision) bool { return d.allowed != nil }

// ReusedLast reports whether the split residual of c holds, as the last
// override set checked, the set d holds.
func (r *Revision) ReusedLast(c *toolcall.Caller, d *GrantDecision) bool {
	res := r.split().res.Get(c.AppendFingerprint(nil))
	return res != nil && res.last.Load() != nil && res.last.Load() == d.canon
}
