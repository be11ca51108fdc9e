package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// grantMode is the result of analysing the closure of
// data.toolgate.grant.granted: whether its value depends only on the
// revision and the caller, and why (or why not).
type grantMode struct {
	cacheable bool
	why       string
	rules     int // rules in the closure
}

// analyseGrant decides, from the compiled policy, whether granted can be
// memoised per caller. It follows every ref and call from the rules that
// define granted through the compiler's rule tree and is conservative:
// anything it cannot resolve makes the policy uncacheable.
//
// The value of granted depends on the input document, on data and on
// built-in functions. data is part of the revision. Of the input, caller and
// tools depend only on the caller (tools on its roles), so the closure is
// safe to memoise when it reads nothing under input.request, never the
// whole input, and calls no non-deterministic built-in.
func analyseGrant(c *ast.Compiler) grantMode {
	a := &grantAnalysis{c: c, seen: map[*ast.Rule]bool{}, found: map[string]bool{}}
	a.enqueue(a.rulesFor(refGranted))
	a.run()
	switch {
	case len(a.reasons) > 0:
		return grantMode{why: strings.Join(a.reasons, "; "), rules: len(a.seen)}
	case len(a.seen) == 0:
		return grantMode{cacheable: true, why: "no rule defines data.toolgate.grant.granted"}
	}
	if len(a.seen) == 1 {
		return grantMode{cacheable: true, rules: 1, why: "the rule behind granted reads only input.caller, input.tools and data, and calls no non-deterministic built-in"}
	}
	return grantMode{cacheable: true, rules: len(a.seen), why: fmt.Sprintf(
		"the %d rules behind granted read only input.caller, input.tools and data, and call no non-deterministic built-in", len(a.seen))}
}

type grantAnalysis struct {
	c       *ast.Compiler
	seen    map[*ast.Rule]bool
	order   []*ast.Rule // every rule of the closure, in the order reached
	queue   []*ast.Rule
	reasons []string
	found   map[string]bool
	// pure also refuses print: a value computed once per caller would
	// print once, not on every call.
	pure bool
}

// run follows the queue until the closure is complete.
func (a *grantAnalysis) run() {
	for len(a.queue) > 0 {
		r := a.queue[0]
		a.queue = a.queue[1:]
		ast.NewGenericVisitor(a.visit).Walk(r)
	}
}

func (a *grantAnalysis) fail(loc *ast.Location, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if loc != nil && loc.File != "" {
		msg += fmt.Sprintf(" at %s:%d", loc.File, loc.Row)
	}
	if !a.found[msg] {
		a.found[msg] = true
		a.reasons = append(a.reasons, msg)
	}
}

// rulesFor returns every rule a data ref could refer to, hidden modules
// included, in source order so that reasons come out deterministically.
func (a *grantAnalysis) rulesFor(ref ast.Ref) []*ast.Rule {
	rules := a.c.GetRulesDynamicWithOpts(ref, ast.RulesOptions{IncludeHiddenModules: true})
	slices.SortFunc(rules, func(x, y *ast.Rule) int {
		lx, ly := locationOf(x.Location), locationOf(y.Location)
		return cmp.Or(cmp.Compare(lx.File, ly.File), cmp.Compare(lx.Row, ly.Row), cmp.Compare(lx.Col, ly.Col))
	})
	return rules
}

func (a *grantAnalysis) enqueue(rules []*ast.Rule) {
	for _, r := range rules {
		if !a.seen[r] {
			a.seen[r] = true
			a.order = append(a.order, r)
			a.queue = append(a.queue, r)
		}
	}
}

func (a *grantAnalysis) walk(x any) { ast.NewGenericVisitor(a.visit).Walk(x) }

// visit is the generic visitor's callback: true stops the descent below x
// (the node's children are then walked by hand).
func (a *grantAnalysis) visit(x any) bool {
	switch x := x.(type) {
	case *ast.Expr:
		if x.IsCall() {
			terms := x.Terms.([]*ast.Term)
			if op, ok := terms[0].Value.(ast.Ref); ok {
				a.call(op, x.Location)
			} else {
				a.fail(x.Location, "calls %v, which the analysis cannot resolve", terms[0])
			}
			for _, t := range terms[1:] {
				a.walk(t)
			}
			for _, w := range x.With {
				a.walk(w)
			}
			return true
		}
	case *ast.With:
		// `with f as time.now_ns` puts a built-in where a function was.
		if ref, ok := x.Value.Value.(ast.Ref); ok && !isRoot(ref) {
			if _, isBuiltin := ast.BuiltinMap[ref.String()]; isBuiltin {
				a.call(ref, x.Location)
			}
		}
	case *ast.Term:
		switch v := x.Value.(type) {
		case ast.Ref:
			a.ref(v, x.Location)
			for _, t := range v[1:] {
				a.walk(t)
			}
			return true
		case ast.Call:
			if op, ok := v[0].Value.(ast.Ref); ok {
				a.call(op, x.Location)
			} else {
				a.fail(x.Location, "calls %v, which the analysis cannot resolve", v[0])
			}
			for _, t := range v[1:] {
				a.walk(t)
			}
			return true
		case ast.Var:
			a.ref(ast.Ref{x}, x.Location)
			return true
		}
	}
	return false
}

func isRoot(ref ast.Ref) bool {
	return ref[0].Equal(ast.DefaultRootDocument) || ref[0].Equal(ast.InputRootDocument)
}

// ref checks one reference: into input (only caller and tools are safe),
// into data (its rules join the closure), or to a local variable.
func (a *grantAnalysis) ref(ref ast.Ref, loc *ast.Location) {
	switch {
	case ref[0].Equal(ast.InputRootDocument):
		if len(ref) == 1 {
			a.fail(loc, "reads the whole input")
			return
		}
		key, ok := ref[1].Value.(ast.String)
		switch {
		case !ok:
			a.fail(loc, "reads input[%v], a key the analysis cannot resolve", ref[1])
		case key == "request":
			a.fail(loc, "reads %s", groundPrefix(ref))
		}
	case ref[0].Equal(ast.DefaultRootDocument):
		a.enqueue(a.rulesFor(ref))
	}
}

// call checks a call: a function of the policy joins the closure; a
// built-in must be deterministic.
func (a *grantAnalysis) call(op ast.Ref, loc *ast.Location) {
	if op[0].Equal(ast.DefaultRootDocument) {
		rules := a.rulesFor(op)
		if len(rules) == 0 {
			a.fail(loc, "calls %v, which the analysis cannot resolve", op)
		}
		a.enqueue(rules)
		return
	}
	b, ok := ast.BuiltinMap[op.String()]
	switch {
	case !ok:
		a.fail(loc, "calls %v, which the analysis cannot resolve", op)
	case b.Nondeterministic:
		a.fail(loc, "calls %s, a non-deterministic built-in", b.Name)
	case a.pure && (b.Name == ast.InternalPrint.Name || b.Name == ast.Print.Name):
		a.fail(loc, "prints")
	}
}

// groundPrefix is ref up to its first non-constant part: input.request.meta
// for input.request.meta[k].
func groundPrefix(ref ast.Ref) string {
	return ref.ConstantPrefix().String()
}
