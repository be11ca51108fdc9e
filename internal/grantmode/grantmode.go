// Package grantmode is the cacheability analysis of a grant policy: whether
// the value of data.toolgate.grant.granted depends only on the revision and
// the caller, so that the engine may memoise it per caller, and which rules
// of its closure do (the engine's split evaluation precomputes those).
//
// The analysis follows every ref and call from the rules it starts from
// through the compiler's rule tree and is conservative: anything it cannot
// resolve counts against the closure. Its messages name the file and line
// of each reason; the engine prints them as they are in
// Revision.DecisionMode.
//
// The functions only read the compiler; they are safe for concurrent use
// on one compiled policy.
package grantmode

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Mode is the result of analysing the closure of granted: whether its value
// depends only on the revision and the caller, and why (or why not).
type Mode struct {
	Cacheable bool
	Why       string
	Rules     int // rules in the closure
}

// Analyse decides, from the compiled policy, whether granted (the ref of
// the grant rule, data.toolgate.grant.granted) can be memoised per caller.
//
// The value of granted depends on the input document, on data and on
// built-in functions. data is part of the revision. Of the input, caller and
// tools depend only on the caller (tools on its roles), so the closure is
// safe to memoise when it reads nothing under input.request, never the
// whole input, and calls no non-deterministic built-in.
func Analyse(c *ast.Compiler, granted ast.Ref) Mode {
	cl := Walk(c, RulesFor(c, granted), false)
	switch {
	case len(cl.Reasons) > 0:
		return Mode{Why: strings.Join(cl.Reasons, "; "), Rules: len(cl.Rules)}
	case len(cl.Rules) == 0:
		return Mode{Cacheable: true, Why: "no rule defines " + granted.String()}
	}
	if len(cl.Rules) == 1 {
		return Mode{Cacheable: true, Rules: 1, Why: "the rule behind granted reads only input.caller, input.tools and data, and calls no non-deterministic built-in"}
	}
	return Mode{Cacheable: true, Rules: len(cl.Rules), Why: fmt.Sprintf(
		"the %d rules behind granted read only input.caller, input.tools and data, and call no non-deterministic built-in", len(cl.Rules))}
}

// Closure is every rule reached from a set of rules, and what makes their
// value depend on more than the revision and the caller.
type Closure struct {
	// Rules are the rules of the closure, the roots first, in the order
	// reached.
	Rules []*ast.Rule
	// Reasons are the distinct reasons, in the order found, each with its
	// file and line; none when the closure depends on the revision and the
	// caller alone.
	Reasons []string
	// Inputs are the top-level keys of input the closure reads ("caller",
	// "request", ...); "" stands for the whole input or a key the analysis
	// cannot resolve (any key may be read).
	Inputs map[string]bool
}

// ReadsInput reports whether the rules under ref (every rule a data ref
// could refer to, and all they reach) may read input[key]: they name it,
// the whole input, or a key the analysis cannot resolve.
func ReadsInput(c *ast.Compiler, ref ast.Ref, key string) bool {
	in := Walk(c, RulesFor(c, ref), false).Inputs
	return in[key] || in[""]
}

// Walk follows every ref and call from roots (as RulesFor returns them)
// through c's rule tree. pure also refuses print: a value computed once per
// caller would print once, not on every call.
func Walk(c *ast.Compiler, roots []*ast.Rule, pure bool) Closure {
	w := &walker{c: c, seen: map[*ast.Rule]bool{}, found: map[string]bool{}, pure: pure, inputs: map[string]bool{}}
	w.enqueue(roots)
	w.run()
	return Closure{Rules: w.order, Reasons: w.reasons, Inputs: w.inputs}
}

// RulesFor returns every rule a data ref could refer to, hidden modules
// included, in source order so that reasons come out deterministically.
func RulesFor(c *ast.Compiler, ref ast.Ref) []*ast.Rule {
	rules := c.GetRulesDynamicWithOpts(ref, ast.RulesOptions{IncludeHiddenModules: true})
	slices.SortFunc(rules, func(x, y *ast.Rule) int {
		lx, ly := position(x.Location), position(y.Location)
		return cmp.Or(cmp.Compare(lx.File, ly.File), cmp.Compare(lx.Row, ly.Row), cmp.Compare(lx.Col, ly.Col))
	})
	return rules
}

func position(l *ast.Location) ast.Location {
	if l == nil {
		return ast.Location{}
	}
	return *l
}

type walker struct {
	c       *ast.Compiler
	seen    map[*ast.Rule]bool
	order   []*ast.Rule // every rule of the closure, in the order reached
	queue   []*ast.Rule
	reasons []string
	found   map[string]bool
	pure    bool
	inputs  map[string]bool
}

// run follows the queue until the closure is complete.
func (w *walker) run() {
	for len(w.queue) > 0 {
		r := w.queue[0]
		w.queue = w.queue[1:]
		ast.NewGenericVisitor(w.visit).Walk(r)
	}
}

func (w *walker) fail(loc *ast.Location, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if loc != nil && loc.File != "" {
		msg += fmt.Sprintf(" at %s:%d", loc.File, loc.Row)
	}
	if !w.found[msg] {
		w.found[msg] = true
		w.reasons = append(w.reasons, msg)
	}
}

func (w *walker) enqueue(rules []*ast.Rule) {
	for _, r := range rules {
		if !w.seen[r] {
			w.seen[r] = true
			w.order = append(w.order, r)
			w.queue = append(w.queue, r)
		}
	}
}

func (w *walker) walk(x any) { ast.NewGenericVisitor(w.visit).Walk(x) }

// visit is the generic visitor's callback: true stops the descent below x
// (the node's children are then walked by hand).
func (w *walker) visit(x any) bool {
	switch x := x.(type) {
	case *ast.Expr:
		if x.IsCall() {
			terms := x.Terms.([]*ast.Term)
			if op, ok := terms[0].Value.(ast.Ref); ok {
				w.call(op, x.Location)
			} else {
				w.fail(x.Location, "calls %v, which the analysis cannot resolve", terms[0])
			}
			for _, t := range terms[1:] {
				w.walk(t)
			}
			for _, with := range x.With {
				w.walk(with)
			}
			return true
		}
	case *ast.With:
		// `with f as time.now_ns` puts a built-in where a function was.
		if ref, ok := x.Value.Value.(ast.Ref); ok && !isRoot(ref) {
			if _, isBuiltin := ast.BuiltinMap[ref.String()]; isBuiltin {
				w.call(ref, x.Location)
			}
		}
	case *ast.Term:
		switch v := x.Value.(type) {
		case ast.Ref:
			w.ref(v, x.Location)
			for _, t := range v[1:] {
				w.walk(t)
			}
			return true
		case ast.Call:
			if op, ok := v[0].Value.(ast.Ref); ok {
				w.call(op, x.Location)
			} else {
				w.fail(x.Location, "calls %v, which the analysis cannot resolve", v[0])
			}
			for _, t := range v[1:] {
				w.walk(t)
			}
			return true
		case ast.Var:
			w.ref(ast.Ref{x}, x.Location)
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
func (w *walker) ref(ref ast.Ref, loc *ast.Location) {
	switch {
	case ref[0].Equal(ast.InputRootDocument):
		if len(ref) == 1 {
			w.inputs[""] = true
			w.fail(loc, "reads the whole input")
			return
		}
		key, ok := ref[1].Value.(ast.String)
		w.inputs[string(key)] = true
		switch {
		case !ok:
			w.fail(loc, "reads input[%v], a key the analysis cannot resolve", ref[1])
		case key == "request" || key == "history":
			// The caller's history (docs/contract.md §20) changes with
			// every call: a policy reading it is evaluated per call.
			w.fail(loc, "reads %s", groundPrefix(ref))
		}
	case ref[0].Equal(ast.DefaultRootDocument):
		w.enqueue(RulesFor(w.c, ref))
	}
}

// call checks a call: a function of the policy joins the closure; a
// built-in must be deterministic.
func (w *walker) call(op ast.Ref, loc *ast.Location) {
	if op[0].Equal(ast.DefaultRootDocument) {
		rules := RulesFor(w.c, op)
		if len(rules) == 0 {
			w.fail(loc, "calls %v, which the analysis cannot resolve", op)
		}
		w.enqueue(rules)
		return
	}
	b, ok := ast.BuiltinMap[op.String()]
	switch {
	case !ok:
		w.fail(loc, "calls %v, which the analysis cannot resolve", op)
	case b.Nondeterministic:
		w.fail(loc, "calls %s, a non-deterministic built-in", b.Name)
	case w.pure && (b.Name == ast.InternalPrint.Name || b.Name == ast.Print.Name):
		w.fail(loc, "prints")
	}
}

// groundPrefix is ref up to its first non-constant part: input.request.meta
// for input.request.meta[k].
func groundPrefix(ref ast.Ref) string {
	return ref.ConstantPrefix().String()
}
