package engine

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/open-policy-agent/opa/v1/ast"
)

// canonTable keeps one copy of each distinct value a revision memoises per
// caller: the override sets of memoised decisions and the precomputed
// values of split ones. Callers with one role set usually get equal
// values, and a set grows with the registry: without the table every
// cached caller would hold a copy of its own (docs/performance.md,
// Measurements). Entries are weak: a value is dropped once no decision or
// residual holds it.
type canonTable struct {
	mu sync.Mutex
	m  map[int][]weak.Pointer[canonValue]
}

// canonValue is a shared value and what is derived from it once.
type canonValue struct {
	term *ast.Term
	// For an override set: one flag per row, and the rows it grants.
	// allowed is filled by the first get that asks for it (a value first
	// kept as a split's precomputed one is a granted set later).
	derived sync.Once
	allowed []bool
	visible atomic.Pointer[[]int]
}

// get returns the canonical copy of t, t itself when it is the first.
// derive, when not nil, fills the derived fields once per entry, before
// get returns. A new entry is frozen first: canonical copies are read by
// concurrent evaluations and decisions without synchronisation.
func (ct *canonTable) get(t *ast.Term, derive func(*canonValue)) *canonValue {
	c := ct.lookup(t)
	if derive != nil {
		c.derived.Do(func() { derive(c) })
	}
	return c
}

func (ct *canonTable) lookup(t *ast.Term) *canonValue {
	h := t.Value.Hash()
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for _, w := range ct.m[h] {
		if c := w.Value(); c != nil && c.term.Equal(t) {
			return c
		}
	}
	freeze(t.Value)
	c := &canonValue{term: t}
	if ct.m == nil {
		ct.m = map[int][]weak.Pointer[canonValue]{}
	}
	ct.m[h] = append(ct.m[h], weak.Make(c))
	runtime.AddCleanup(c, ct.prune, h)
	return c
}

// prune drops the entries of hash h whose values are gone.
func (ct *canonTable) prune(h int) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	live := slices.DeleteFunc(ct.m[h], func(w weak.Pointer[canonValue]) bool { return w.Value() == nil })
	if len(live) == 0 {
		delete(ct.m, h)
		return
	}
	ct.m[h] = live
}

func (ct *canonTable) len() int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	n := 0
	for _, ws := range ct.m {
		n += len(ws)
	}
	return n
}

// freeze fills what OPA computes lazily, in place, in v and every value in
// it, so that readers sharing v find nothing left to write: a set or an
// object sorts its keys on its first ordered use (under a sync.Once, but
// set.Intersect and others read the keys unguarded), and a lazy object
// (data read from the store) converts itself on first use without any
// guard. Without it, an evaluation reading a kept value races with the
// first one that compares it.
func freeze(v ast.Value) {
	switch v := v.(type) {
	case ast.Set:
		for _, t := range v.Slice() {
			freeze(t.Value)
		}
	case ast.Object:
		v.Foreach(func(k, x *ast.Term) {
			freeze(k.Value)
			freeze(x.Value)
		})
	case *ast.Array:
		v.Foreach(func(t *ast.Term) { freeze(t.Value) })
	}
}
