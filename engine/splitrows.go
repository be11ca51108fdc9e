package engine

import (
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/grantmode"
)

// Splitting the rows of a comprehension.
//
// A comprehension whose rows read the request, such as
//
//	{t.name | some t in input.tools; t.base; not url(t); not input.request.meta.hide == t.name}
//
// is not precomputable as a whole, but the conjuncts before the first one
// that reads the request are the same for every call of a caller. When
// splitComprehensions has extracted it into a rule of its own, splitRows
// rewrites that rule's comprehension into two:
//
//	toolgate__split_rows_0 := [t | some t in input.tools; t.base; not url(t)]
//	{t.name | some t in toolgate__split_rows_0; not input.request.meta.hide == t.name}
//
// The first is a complete rule that depends on the caller alone, so the
// split evaluation computes it once per caller like any other; the second
// evaluates the rest per call. The array keeps every solution of the
// prefix, duplicates included, in the order the whole evaluation finds
// them, and the rest is evaluated on each in that order: the same rows
// reach the same conjuncts in the same order, so a call that does not fail
// answers what the whole evaluation answers. A failing prefix is evaluated
// on every row before any conjunct of the rest, which may fail first in
// the whole evaluation; grantSplit answers every failure of a policy
// whose rows are split with the whole evaluation's.
//
// A comprehension is split only when it is safe to: the prefix is the
// longest run of conjuncts, in the order written, whose compiled
// expressions (located by their source offsets) read neither the request
// nor the whole input, call nothing non-deterministic, print nothing and
// carry no `with`; the compiler evaluates every expression of the prefix
// before any other (it may reorder them for safety); the prefix does more
// than enumerate; and no variable it shares with the rest names a rule or
// an import of the package. A rewrite the compiler refuses is dropped
// whole (newSplitGrant).

// rowsPrefix names the rules that hold the precomputed rows.
const rowsPrefix = splitPrefix + "rows_"

// splitRows rewrites, in modules (the output of splitComprehensions,
// changed in place), the extracted comprehensions of the closure of
// granted that are not precomputable and whose rows start with a
// request-independent prefix worth computing once; fc is modules compiled. It returns where each rows rule it added
// comes from, keyed by its name; nothing when it added none.
func splitRows(modules map[string]*ast.Module, fc *ast.Compiler, origins map[string]splitOrigin) map[string]splitOrigin {
	candidates := map[string]bool{}
	for _, r := range grantmode.Walk(fc, grantmode.RulesFor(fc, refGranted), false).Rules {
		name := string(r.Head.Name)
		if _, ok := origins[name]; ok && len(grantmode.Walk(fc, grantmode.RulesFor(fc, rulePath(r)), true).Reasons) > 0 {
			candidates[name] = true
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	rows := map[string]splitOrigin{}
	appendRules(modules, func(m *ast.Module, r *ast.Rule) []*ast.Rule {
		if !candidates[string(r.Head.Name)] || r.Head.Value == nil {
			return nil
		}
		compiled := fc.GetRulesExact(rulePath(r))
		if len(compiled) != 1 {
			return nil
		}
		rowsName := rowsPrefix + strconv.Itoa(len(rows))
		rule := splitRowsOf(modules, m, r.Head.Value, compiled[0], fc, rowsName)
		if rule == nil {
			return nil
		}
		rows[rowsName] = origins[string(r.Head.Name)]
		return []*ast.Rule{rule}
	})
	return rows
}

// splitRowsOf splits the comprehension comp (parsed, in module m) whose
// compiled form is in the rule compiled: it returns the rows rule to add,
// having rewritten comp's body, or nil and leaves comp as it was.
func splitRowsOf(modules map[string]*ast.Module, m *ast.Module, comp *ast.Term, compiled *ast.Rule, fc *ast.Compiler, rowsName string) *ast.Rule {
	body := comprehensionBody(comp.Value)
	if body == nil || comp.Location == nil {
		return nil
	}
	var cbody ast.Body
	ast.WalkTerms(compiled, func(t *ast.Term) bool {
		if cbody == nil && ast.IsComprehension(t.Value) && sameOffset(t.Location, comp.Location) {
			cbody = *comprehensionBody(t.Value)
		}
		return cbody != nil
	})
	if cbody == nil {
		return nil
	}
	parsed := *body
	k := independentPrefix(fc, parsed, cbody)
	if k == 0 || !slices.ContainsFunc(parsed[:k], func(e *ast.Expr) bool { return !isSomeDecl(e) }) {
		return nil // nothing to compute once, or only the enumeration
	}
	prefix, rest := parsed[:k], parsed[k:]
	// The variables the prefix binds for the rest and the head.
	inPrefix := varCounts(prefix)
	later := varCounts(rest)
	for v, n := range headVars(comp.Value) {
		later[v] += n
	}
	globals := packageNames(modules, m)
	var shared []string
	for v := range inPrefix {
		if later[v] > 0 {
			if globals[v] {
				return nil // a variable named like a rule or an import
			}
			shared = append(shared, string(v))
		}
	}
	slices.Sort(shared)
	// Each row of the prefix is the values of the shared variables: an
	// array of them, the value itself when there is one.
	loc := comp.Location
	vars := make([]*ast.Term, len(shared))
	for i, v := range shared {
		vars[i] = ast.VarTerm(v).SetLocation(loc)
	}
	pattern, row := "_", ast.ArrayTerm(vars...).SetLocation(loc)
	switch len(shared) {
	case 0:
	case 1:
		pattern, row = shared[0], vars[0]
	default:
		pattern = "[" + strings.Join(shared, ", ") + "]"
	}
	iter, err := ast.ParseBodyWithOpts("some "+pattern+" in "+rowsName, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil || len(iter) != 1 {
		return nil
	}
	ast.WalkTerms(iter, func(t *ast.Term) bool { t.Location = loc; return false })
	iter[0].Location = loc
	if d, ok := iter[0].Terms.(*ast.SomeDecl); ok {
		d.Location = loc
	}
	*body = ast.NewBody(append(iter, rest...)...)
	head := &ast.Head{
		Name:      ast.Var(rowsName),
		Reference: ast.Ref{ast.VarTerm(rowsName).SetLocation(loc)},
		Value:     ast.ArrayComprehensionTerm(row, ast.NewBody(prefix...)).SetLocation(loc),
		Assign:    true,
		Location:  loc,
	}
	return &ast.Rule{
		Head:     head,
		Body:     ast.NewBody(ast.NewExpr(ast.BooleanTerm(true).SetLocation(loc)).SetLocation(loc)),
		Module:   m,
		Location: loc,
	}
}

// independentPrefix returns how many of the parsed conjuncts, from the
// first, depend on the caller alone and are evaluated, as compiled (cbody),
// before any other conjunct and before the head.
func independentPrefix(fc *ast.Compiler, parsed, cbody ast.Body) int {
	n := len(parsed)
	dep := make([]bool, n+1)
	dep[n] = true // the head, and anything not found in the body
	for i, e := range parsed {
		dep[i] = len(e.With) > 0
	}
	index := make([]int, len(cbody))
	for j, e := range cbody {
		index[j] = n
		for i, p := range parsed {
			if within(e.Location, p.Location) {
				index[j] = i
				break
			}
		}
		if !dep[index[j]] && dependsOnRequest(fc, e) {
			dep[index[j]] = true
		}
	}
	k := slices.Index(dep, true)
	// Every compiled expression of the prefix comes before every other.
	other := false
	for _, i := range index {
		if i >= k {
			other = true
		} else if other {
			return 0
		}
	}
	return k
}

// dependsOnRequest reports whether a compiled expression's value may
// differ between two calls of one caller: what grantmode reports of a rule
// made of it alone (pure: it is computed once, so print is refused too).
func dependsOnRequest(fc *ast.Compiler, e *ast.Expr) bool {
	if len(e.With) > 0 {
		return true
	}
	probe := &ast.Rule{
		Head: &ast.Head{Name: "probe", Reference: ast.Ref{ast.VarTerm("probe")}, Value: ast.BooleanTerm(true)},
		Body: ast.Body{e},
	}
	return len(grantmode.Walk(fc, []*ast.Rule{probe}, true).Reasons) > 0
}

func comprehensionBody(v ast.Value) *ast.Body {
	switch c := v.(type) {
	case *ast.ArrayComprehension:
		return &c.Body
	case *ast.SetComprehension:
		return &c.Body
	case *ast.ObjectComprehension:
		return &c.Body
	}
	return nil
}

func headVars(v ast.Value) map[ast.Var]int {
	switch c := v.(type) {
	case *ast.ArrayComprehension:
		return varCounts(c.Term)
	case *ast.SetComprehension:
		return varCounts(c.Term)
	case *ast.ObjectComprehension:
		counts := varCounts(c.Key)
		for v, n := range varCounts(c.Value) {
			counts[v] += n
		}
		return counts
	}
	return nil
}

func isSomeDecl(e *ast.Expr) bool {
	_, ok := e.Terms.(*ast.SomeDecl)
	return ok
}

// packageNames are the names a variable of m could resolve to other than
// a local: the rules of m's package (in every module of it) and m's
// imports.
func packageNames(modules map[string]*ast.Module, m *ast.Module) map[ast.Var]bool {
	names := map[ast.Var]bool{}
	for _, o := range modules {
		if !o.Package.Path.Equal(m.Package.Path) {
			continue
		}
		for _, r := range o.Rules {
			if v, ok := r.Head.Ref()[0].Value.(ast.Var); ok {
				names[v] = true
			}
		}
	}
	for _, imp := range m.Imports {
		names[imp.Name()] = true
	}
	return names
}

func sameOffset(a, b *ast.Location) bool {
	return a != nil && b != nil && a.File == b.File && a.Offset == b.Offset
}

// within reports whether a starts inside the source text of b.
func within(a, b *ast.Location) bool {
	return a != nil && b != nil && a.File == b.File && b.Offset <= a.Offset && a.Offset < b.Offset+len(b.Text)
}
