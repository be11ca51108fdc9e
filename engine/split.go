package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/toolgate/toolgate/internal/grantmode"
	"github.com/toolgate/toolgate/internal/lru"
	"github.com/toolgate/toolgate/toolcall"
)

// splitGrant is the split evaluation of a grant policy that reads the
// request: the parts of the closure of granted that depend on
// the revision and the caller alone are computed once per caller, the rest
// per call.
//
// The policy is first rewritten: every closed comprehension (one that
// shares no variable with the rest of its rule) becomes a complete rule of
// its own in the same package, which is equivalent in Rego. Every complete
// rule without arguments in the closure of granted whose own closure reads
// neither input.request nor the whole input and calls no non-deterministic
// built-in (nor print) is "precomputable": its value is the same for every
// call of a caller. Each call evaluates the grant query of the rewritten
// policy with OPA's virtual document cache preloaded with the values of
// those rules that earlier calls of the caller computed; after a call that
// did not fail, the values it computed (read from that cache's first
// frame) are added to the caller's residual. So nothing is computed that
// the whole evaluation would not compute for the same request: a helper
// that only some requests need (and that may fail, or be slow) is computed
// when one of them comes, failures stay where they were, and the first call
// of a caller costs what a whole evaluation costs. Under a `with` modifier
// the preloaded values are not seen (OPA opens a new cache frame), so they
// are computed there as before, and nothing computed there is kept.
//
// A comprehension that reads the request in its rows is split further: the
// conditions of its rows before the first that reads the request become a
// precomputable rule of their own (splitrows.go).
type splitGrant struct {
	grantQ rego.PreparedEvalQuery // the grant query over the rewritten policy
	refs   []ast.Ref              // the precomputable complete rules
	why    string                 // what is precomputed, for DecisionMode
	// rows: the rows of a comprehension are split (splitrows.go), and a
	// failure is answered by the whole evaluation.
	rows bool
	res  *lru.Cache[*residual]
}

// residual is the per-caller state of a split evaluation.
type residual struct {
	view *callerView
	// base holds the values computed so far, a snapshot replaced whole
	// when a call computes more.
	base atomic.Pointer[preloads]
	// last is the canonical copy of the last override set the evaluation
	// returned: a set read from a preloaded value is that same value on
	// every call, and need not be checked again.
	last atomic.Pointer[canonValue]
	// first is closed when the caller's first evaluation has ended, led
	// by the call that set leader: the calls arriving meanwhile wait for
	// it, so that the values it computes are computed once (see
	// grantSplit).
	leader atomic.Bool
	first  chan struct{}
}

// preloads is a snapshot of a residual's values; canon keeps their shared
// copies alive.
type preloads struct {
	vals  []preloaded
	canon []*canonValue
}

type preloaded struct {
	ref ast.Ref
	val *ast.Term // nil: undefined
}

// splitPrefix names the rules the rewrite adds.
const splitPrefix = "toolgate__split_"

// newSplitGrant builds the split evaluation, or returns nil and why not.
// modules are the parsed modules c was compiled from; newCompiler returns a
// compiler configured like c; opts are the options of the prepared queries.
func newSplitGrant(ctx context.Context, modules map[string]*ast.Module, c *ast.Compiler, newCompiler func() *ast.Compiler, opts []func(*rego.Rego)) (*splitGrant, string) {
	if grantmode.Analyse(c, refGranted).Cacheable {
		return nil, ""
	}
	fc := c
	split, origins := splitComprehensions(modules)
	if len(origins) > 0 {
		fc = newCompiler()
		fc.Compile(split)
		if fc.Failed() {
			// Not expected: the rewrite keeps a policy valid. Be safe.
			return nil, "the policy could not be split: " + fc.Errors.Error()
		}
	}
	refs := precomputable(fc, origins)
	var rows map[string]splitOrigin
	if len(origins) > 0 {
		// The rows of a comprehension that reads the request, up to their
		// first conjunct that does: a rewrite the compiler refuses is
		// dropped, and the policy is split as before.
		if rows = splitRows(split, fc, origins); len(rows) > 0 {
			rc := newCompiler()
			rc.Compile(split)
			if rc.Failed() {
				rows = nil
			} else {
				fc, refs = rc, precomputable(rc, origins)
			}
		}
	}
	if len(refs) == 0 {
		return nil, "no part of it depends on the caller alone"
	}
	prepare := func(q string) (rego.PreparedEvalQuery, error) {
		return rego.New(append([]func(*rego.Rego){rego.Query(q)}, append(slices.Clip(opts), rego.Compiler(fc))...)...).PrepareForEval(ctx)
	}
	sg := &splitGrant{refs: refs, rows: len(rows) > 0, res: lru.New[*residual](DefaultDecisionCacheSize)}
	var err error
	if sg.grantQ, err = prepare(wrapQuery("g", refGranted)); err != nil {
		return nil, "the policy could not be split: " + err.Error()
	}
	sg.why = fmt.Sprintf("once per caller: %s; the rest per call", describeRefs(refs, origins, rows))
	return sg, ""
}

// split returns the revision's split evaluation, nil when it has none or
// the decision cache is off (then every decision is evaluated whole).
func (r *Revision) split() *splitGrant {
	if r.opts.noDecisionCache {
		return nil
	}
	return r.policies.split
}

// splitMode is what DecisionMode adds for a policy evaluated per call.
func (r *Revision) splitMode() string {
	switch {
	case r.opts.noDecisionCache:
		return "; evaluated whole (the decision cache is off)"
	case r.policies.split != nil:
		return "; split: " + r.policies.split.why
	}
	return "; evaluated whole: " + r.policies.splitWhy
}

// describeRefs names the precomputed values for DecisionMode: rules by
// their ref, extracted comprehensions by where they were written.
func describeRefs(refs []ast.Ref, origins, rows map[string]splitOrigin) string {
	parts := make([]string, len(refs))
	for i, ref := range refs {
		parts[i] = ref.String()
		if o, ok := origins[lastKey(ref)]; ok {
			parts[i] = "the comprehension at " + o.loc.String()
		}
		if o, ok := rows[lastKey(ref)]; ok {
			parts[i] = "the rows of the comprehension at " + o.loc.String() + " up to its first condition on the request"
		}
	}
	return strings.Join(parts, ", ")
}

// rulePath is the ref of the document a rule defines up to its first
// variable: the package path extended by the ground prefix of the rule's
// head ref (what OPA's deprecated Rule.Path returned).
func rulePath(r *ast.Rule) ast.Ref {
	return r.Ref().GroundPrefix()
}

func lastKey(ref ast.Ref) string {
	s, _ := ref[len(ref)-1].Value.(ast.String)
	return string(s)
}

// splitOrigin is where an extracted comprehension was written.
type splitOrigin struct {
	rule string // the ref of the rule it was in
	loc  Location
}

// splitComprehensions returns a copy of modules where every closed
// comprehension inside a rule is replaced by a reference to a new complete
// rule of the same package holding it, and how many were replaced.
//
// A comprehension is closed when no variable in it occurs anywhere else in
// its rule (wildcards, input and data aside): then it cannot capture a
// variable of the rule, and in a rule of its own in the same module every
// name in it (a rule, a function, an import) resolves as before. Only the
// outermost closed comprehensions are moved; those under a `with` modifier
// stay where they are. Comprehensions inside a moved one are moved too.
func splitComprehensions(modules map[string]*ast.Module) (map[string]*ast.Module, map[string]splitOrigin) {
	out := make(map[string]*ast.Module, len(modules))
	for name, m := range modules {
		out[name] = m.Copy()
	}
	origins := map[string]splitOrigin{}
	appendRules(out, func(m *ast.Module, r *ast.Rule) []*ast.Rule {
		if r.Default {
			return nil // a default's value must be ground: it stays as written
		}
		var added []*ast.Rule
		for _, t := range closedComprehensions(r) {
			ruleName := ast.Var(splitPrefix + strconv.Itoa(len(origins)))
			origins[string(ruleName)] = splitOrigin{rule: rulePath(r).String(), loc: locationOf(t.Location)}
			comp := &ast.Term{Value: t.Value, Location: t.Location}
			t.Value = ruleName
			head := &ast.Head{
				Name:      ruleName,
				Reference: ast.Ref{ast.VarTerm(string(ruleName)).SetLocation(t.Location)},
				Value:     comp,
				Assign:    true,
				Location:  t.Location,
			}
			body := ast.NewBody(ast.NewExpr(ast.BooleanTerm(true).SetLocation(t.Location)).SetLocation(t.Location))
			added = append(added, &ast.Rule{Head: head, Body: body, Module: m, Location: t.Location})
		}
		return added
	})
	return out, origins
}

// closedComprehensions finds the closed comprehensions of r, outermost
// first.
func closedComprehensions(r *ast.Rule) []*ast.Term {
	// Count every variable of the rule: a comprehension is closed when each
	// of its variables occurs only in it.
	var total map[ast.Var]int
	var closed []*ast.Term
	ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case *ast.With:
			return true
		case *ast.Term:
			if !ast.IsComprehension(x.Value) {
				return false
			}
			if total == nil {
				total = varCounts(r)
			}
			for v, k := range varCounts(x) {
				if total[v] != k {
					return false
				}
			}
			closed = append(closed, x)
		}
		return false
	}).Walk(r)
	return closed
}

// varCounts counts the variables under x. The name a call is made by (a
// built-in, a function of the policy or an import) is not a variable of the
// rule: it resolves alike everywhere in the module.
func varCounts(x any) map[ast.Var]int {
	counts := map[ast.Var]int{}
	var vis *ast.GenericVisitor
	operator := func(op *ast.Term) {
		if ref, ok := op.Value.(ast.Ref); ok {
			for _, t := range ref[1:] {
				vis.Walk(t)
			}
			return
		}
		vis.Walk(op)
	}
	vis = ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case *ast.Expr:
			if x.IsCall() {
				terms := x.Terms.([]*ast.Term)
				operator(terms[0])
				for _, t := range terms[1:] {
					vis.Walk(t)
				}
				for _, w := range x.With {
					vis.Walk(w)
				}
				return true
			}
		case ast.Call:
			operator(x[0])
			for _, t := range x[1:] {
				vis.Walk(t)
			}
			return true
		case ast.Var:
			if !x.IsWildcard() && !x.Equal(ast.InputRootDocument.Value) && !x.Equal(ast.DefaultRootDocument.Value) {
				counts[x]++
			}
		}
		return false
	})
	vis.Walk(x)
	return counts
}

// precomputable returns, in a deterministic order, the refs of the complete
// rules without arguments in the closure of granted whose value depends on
// the revision and the caller alone. An extracted comprehension is left out
// when the rule it was in is precomputed whole.
func precomputable(c *ast.Compiler, origins map[string]splitOrigin) []ast.Ref {
	var refs []ast.Ref
	seen := map[string]bool{}
	for _, r := range grantmode.Walk(c, grantmode.RulesFor(c, refGranted), false).Rules {
		if len(r.Head.Args) > 0 || r.Head.RuleKind() != ast.SingleValue {
			continue
		}
		ref := rulePath(r)
		if !ref.IsGround() || ref.Equal(refGranted) || seen[ref.String()] {
			continue
		}
		seen[ref.String()] = true
		rules := grantmode.RulesFor(c, ref)
		if len(rules) == 0 || slices.ContainsFunc(rules, func(x *ast.Rule) bool { return !rulePath(x).Equal(ref) }) {
			continue // the ref also names rules below it, or nothing
		}
		if len(grantmode.Walk(c, rules, true).Reasons) == 0 {
			refs = append(refs, ref)
		}
	}
	whole := map[string]bool{}
	for _, ref := range refs {
		whole[ref.String()] = true
	}
	return slices.DeleteFunc(refs, func(ref ast.Ref) bool {
		o, ok := origins[lastKey(ref)]
		return ok && whole[o.rule]
	})
}

// grantSplit is Grant for a split revision: the request-dependent rest is
// evaluated with the caller's values preloaded, and what the call computed
// of the precomputable values is kept for the next.
func (r *Revision) grantSplit(ctx context.Context, sg *splitGrant, c *toolcall.Caller, req *Request, key []byte) *GrantDecision {
	res := sg.res.Get(key)
	if res == nil {
		res = &residual{view: r.view(c), first: make(chan struct{})}
		res.base.Store(&preloads{})
		res = sg.res.Put(key, res)
	}
	// The caller's first call computes its values whole; the calls that
	// arrive meanwhile wait for them, each under its own context, rather
	// than compute them too. A first call that fails leaves them to
	// compute what it could not.
	if !res.leader.Load() && res.leader.CompareAndSwap(false, true) {
		defer close(res.first)
		if h := r.flights.hook; h != nil {
			h(true)
		}
	} else {
		select {
		case <-res.first:
		default:
			if h := r.flights.hook; h != nil {
				h(false)
			}
			select {
			case <-res.first:
			case <-ctx.Done():
				return r.ended(ctx, c)
			}
		}
	}
	d := &GrantDecision{Revision: r, view: res.view}
	in, err := r.input(c, d.view, req, -1)
	if err != nil {
		d.Outcome, d.Err = Failed, inputError(refGranted, err)
		return d
	}
	base := res.base.Load()
	cache := &preloadedCache{base: base.vals, inner: topdown.NewVirtualCache()}
	rs, err := r.eval(ctx, sg.grantQ, in, rego.EvalVirtualCache(cache))
	if err != nil {
		d.Outcome, d.Err = Failed, policyError(refGranted, err, ctx)
		if sg.rows && shared(d.Err) {
			// The split rows' prefix is computed for every row before
			// the rest, which may fail first in a whole evaluation: the
			// whole evaluation says which failure it is.
			r.wholeGrant(ctx, d, in)
		}
		return d
	}
	if len(base.vals) < len(sg.refs) {
		r.harvest(sg, res, base, cache.inner)
	}
	arr := rs[0].Bindings["g"].(*ast.Array)
	if arr.Len() > 0 {
		if set, ok := arr.Elem(0).Value.(ast.Set); ok {
			if last := res.last.Load(); last != nil && last.term.Value == set {
				d.Outcome, d.granted, d.allowed, d.canon = Override, set, last.allowed, last
				return d
			}
		}
	}
	r.readGranted(d, arr)
	if d.Outcome == Override {
		d.precompute()
		// The canonical copy, not the set as evaluated: the residual lives
		// as long as the caller is cached, and a set evaluated afresh (a
		// caller's first call computes its values) is as large as the
		// registry, once per caller. A later call whose granted is a
		// preloaded value returns that value, which is canonical too.
		res.last.Store(d.canon)
	}
	return d
}

// wholeGrant sets d from the whole evaluation of the grant query on in.
func (r *Revision) wholeGrant(ctx context.Context, d *GrantDecision, in ast.Value) {
	d.Outcome, d.Err = NoOverride, nil
	rs, err := r.eval(ctx, r.policies.grantQ, in)
	if err != nil {
		d.Outcome, d.Err = Failed, policyError(refGranted, err, ctx)
		return
	}
	r.readGranted(d, rs[0].Bindings["g"])
	if d.Outcome == Override {
		d.precompute()
	}
}

// harvest adds to the caller's residual the precomputable values that a
// successful evaluation left in the first frame of its virtual cache: the
// values the rules have for this caller, whatever the request.
func (r *Revision) harvest(sg *splitGrant, res *residual, base *preloads, vc topdown.VirtualCache) {
	next := &preloads{vals: slices.Clone(base.vals), canon: slices.Clone(base.canon)}
	for _, ref := range sg.refs {
		if slices.ContainsFunc(base.vals, func(p preloaded) bool { return p.ref.Equal(ref) }) {
			continue
		}
		v, undefined := vc.Get(ref)
		switch {
		case undefined:
			next.vals = append(next.vals, preloaded{ref: ref})
		case v != nil:
			c := r.canon.get(v, nil)
			next.canon = append(next.canon, c)
			next.vals = append(next.vals, preloaded{ref: ref, val: c.term})
		}
	}
	if len(next.vals) > len(base.vals) {
		res.base.CompareAndSwap(base, next) // a lost race only delays the values
	}
}

// preloadedCache is OPA's virtual document cache with the caller's
// precomputed values in its first frame. A `with` modifier pushes a frame:
// above the first, the values are not seen, so a rule evaluated under
// `with` is computed as usual.
type preloadedCache struct {
	base  []preloaded
	depth int
	inner topdown.VirtualCache
}

func (p *preloadedCache) Push() { p.depth++; p.inner.Push() }
func (p *preloadedCache) Pop()  { p.depth--; p.inner.Pop() }

func (p *preloadedCache) Get(ref ast.Ref) (*ast.Term, bool) {
	if p.depth == 0 {
		for i := range p.base {
			if p.base[i].ref.Equal(ref) {
				return p.base[i].val, p.base[i].val == nil
			}
		}
	}
	return p.inner.Get(ref)
}

func (p *preloadedCache) Put(ref ast.Ref, value *ast.Term) { p.inner.Put(ref, value) }
func (p *preloadedCache) Keys() []ast.Ref                  { return p.inner.Keys() }
