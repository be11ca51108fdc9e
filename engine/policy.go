package engine

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown/print"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/internal/regoload"
	"github.com/toolgate/toolgate/toolcall"
)

// The rules toolgate reads (docs/contract.md §4).
var (
	refGranted  = ast.MustParseRef("data.toolgate.grant.granted")
	refDeny     = ast.MustParseRef("data.toolgate.call.deny")
	refResult   = ast.MustParseRef("data.toolgate.call.result")
	refApproval = ast.MustParseRef("data.toolgate.call.approval")
	refConfirm  = ast.MustParseRef("data.toolgate.call.confirm")
	refLimit    = ast.MustParseRef("data.toolgate.call.limit")
	refDecided  = ast.MustParseRef("data.toolgate.grant.url_drivers_decided")
	refPrompts  = ast.MustParseRef("data.toolgate.grant.prompts")
	refResource = ast.MustParseRef("data.toolgate.grant.resource")
	// The result rules (docs/contract.md §18).
	refResultDeny = ast.MustParseRef("data.toolgate.result.deny")
	refRedact     = ast.MustParseRef("data.toolgate.result.redact")
	callRefs      = []ast.Ref{refDeny, refResult, refApproval, refConfirm, refLimit}
	resultRefs    = []ast.Ref{refResultDeny, refRedact}
	watchedRefs   = append(append([]ast.Ref{refGranted}, callRefs...), resultRefs...)
)

// Location is a place in a policy file. Row and Col are OPA's names for the
// 1-based line and column (never a registry row: see [diag.Diagnostic],
// which calls them Line and Column).
type Location = toolcall.Location

func locationOf(l *ast.Location) Location {
	if l == nil {
		return Location{}
	}
	return Location{File: l.File, Row: l.Row, Col: l.Col}
}

// Diagnostic is one problem found while loading policies or data, as
// [CompileError] lists it; [Diagnostic.Diag] converts it to toolgate's one
// kind of diagnostic, which errors.As gives from any load error.
type Diagnostic struct {
	Location
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

func (d Diagnostic) String() string {
	if d.File == "" {
		return d.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", d.File, d.Row, d.Col, d.Message)
}

// CompileError reports every problem found in a policy directory. Nothing of
// a directory with a CompileError is loaded.
type CompileError struct {
	Diagnostics []Diagnostic
}

func (e *CompileError) Error() string { return e.List().Error() }

// List returns the diagnostics as a [diag.List] (Line and Column for Row and
// Col) that renders as Error does. errors.As with a *diag.List target
// finds it too.
func (e *CompileError) List() *diag.List {
	l := &diag.List{Diagnostics: make([]diag.Diagnostic, len(e.Diagnostics)), Style: compileErrorStyle}
	for i, d := range e.Diagnostics {
		l.Diagnostics[i] = d.Diag()
	}
	return l
}

// As gives errors.As the diagnostics as a *diag.List.
func (e *CompileError) As(target any) bool { return diag.SetAs(target, e.List()) }

var compileErrorStyle = &diag.Style{
	Header: func(n int) string {
		if n == 1 {
			return "policies: 1 error"
		}
		return fmt.Sprintf("policies: %d errors", n)
	},
	Indent: "  ",
	Item:   func(d diag.Diagnostic) string { return diagnosticOf(d).String() },
}

// Diag returns d as toolgate's one kind of diagnostic.
func (d Diagnostic) Diag() diag.Diagnostic {
	return diag.Diagnostic{Code: d.Code, File: d.File, Line: d.Row, Column: d.Col, Message: d.Message}
}

func diagnosticOf(d diag.Diagnostic) Diagnostic {
	return Diagnostic{Location: Location{File: d.File, Row: d.Line, Col: d.Column}, Code: d.Code, Message: d.Message}
}

// compileErrorOf converts a load's diagnostics.
func compileErrorOf(ds []diag.Diagnostic) *CompileError {
	ce := &CompileError{Diagnostics: make([]Diagnostic, len(ds))}
	for i, d := range ds {
		ce.Diagnostics[i] = diagnosticOf(d)
	}
	return ce
}

// provenance is a copy of one rule that defines a watched ref, under a name
// of its own, so that one evaluation also tells which rule produced what.
type provenance struct {
	target  ast.Ref // the watched ref the original rule defines
	ref     ast.Ref // the copy's absolute ref
	loc     Location
	dflt    bool // a default rule
	binding string
}

// policySet is a compiled policy directory with its prepared queries. It is
// immutable once built and shared by every decision of a revision.
type policySet struct {
	compiler *ast.Compiler
	store    storage.Store
	files    []string
	prov     []provenance
	// callRules is false when nothing defines data.toolgate.call.deny,
	// .result, .approval, .confirm or .limit (no rule, no data document):
	// accepted calls skip the call query.
	callRules bool
	// resultRules is false when nothing defines data.toolgate.result.deny
	// or .redact: results are answered as the method returned them, and
	// no result document is built (docs/contract.md §18).
	resultRules bool
	// limitRules is false when nothing defines data.toolgate.call.limit:
	// the call query does not ask for it, so call rules without limits
	// cost what they did before limits existed.
	limitRules bool
	grantQ     rego.PreparedEvalQuery // granted only: the hot path
	explainQ   rego.PreparedEvalQuery // granted with provenance and url_drivers_decided
	callQ      rego.PreparedEvalQuery // deny, result, approval, confirm and limit with provenance
	resultQ    rego.PreparedEvalQuery // the result rules with provenance; prepared only with resultRules
	// patterns are the redact rules' constant regular expressions,
	// compiled at load (an invalid one fails the load, naming it);
	// dynamic holds those a policy computes per call (redact.go).
	patterns map[string]*regexp.Regexp
	dynamic  patternCache
	// split evaluates a grant policy that reads the request in two parts
	// (split.go); nil, with splitWhy saying why, when it cannot.
	split    *splitGrant
	splitWhy string
	// prompts is true when something may define data.toolgate.grant.prompts
	// (a rule or a data document): the grant queries then also bind p to
	// it (docs/contract.md §16). Policies that do not define it evaluate
	// exactly what they did before.
	prompts bool
	// resourceQ reads data.toolgate.grant.resource, bound to r; set only
	// when something may define it (resource.go).
	resourceQ *rego.PreparedEvalQuery
}

// compilePolicies parses, compiles and prepares every policy and data file.
//
// caps are the built-ins the policies may call: a call of any other fails
// to compile (rego_type_error: undefined function, with its location).
func compilePolicies(ctx context.Context, files []sourceFile, printHook func(string), caps *ast.Capabilities) (*policySet, error) {
	parsed, err := regoload.Parse(files, caps)
	if err != nil {
		return nil, compileErrorOf(diag.From(err))
	}
	modules, data := parsed.Modules, parsed.Data
	ps := &policySet{files: parsed.Files}
	own := make(map[string]int, len(modules)) // each module's own rules, before the copies
	for n, m := range modules {
		own[n] = len(m.Rules)
	}
	ps.prov = addProvenance(modules)
	for _, p := range ps.prov {
		switch {
		case refIn(p.target, callRefs):
			ps.callRules = true
			ps.limitRules = ps.limitRules || p.target.Equal(refLimit)
		case refIn(p.target, resultRefs):
			ps.resultRules = true
		}
	}
	if tg, ok := data["toolgate"].(map[string]any); ok {
		if call, ok := tg["call"]; ok {
			ps.callRules = true
			if m, ok := call.(map[string]any); ok {
				_, defined := m["limit"]
				ps.limitRules = ps.limitRules || defined
			}
		}
		if _, ok := tg["result"]; ok {
			ps.resultRules = true
		}
	}
	// Constant patterns are compiled once, here: an invalid one is a load
	// error that names it and its rule.
	var perr []diag.Diagnostic
	ps.patterns, perr = constantPatterns(modules, data)
	if len(perr) > 0 {
		return nil, compileErrorOf(perr)
	}

	ps.store = inmem.NewFromObject(data)
	compile := func() (*ast.Compiler, error) {
		txn, err := ps.store.NewTransaction(ctx)
		if err != nil {
			return nil, fmt.Errorf("compile policies: %w", err)
		}
		defer ps.store.Abort(ctx, txn)
		c := regoload.NewCompiler(ctx, caps, ps.store, txn, printHook != nil)
		c.Compile(modules)
		return c, nil
	}
	c, err := compile()
	if err != nil {
		return nil, err
	}
	// A compiler configured like c, for the split's rewrite of the same
	// modules (split.go): c has checked them against the data already.
	newCompiler := func() *ast.Compiler { return regoload.NewCompiler(ctx, caps, nil, nil, printHook != nil) }
	if c.Failed() {
		// The copies change OPA's messages (a rule sharing its line with
		// its copy is named "in rule ..."; a recursion names the copy):
		// report what the policies alone give, as `toolgate test` does.
		errs := c.Errors
		for n, m := range modules {
			m.Rules = m.Rules[:own[n]]
		}
		if alone, err := compile(); err == nil && alone.Failed() {
			errs = alone.Errors
		}
		return nil, compileErrorOf(regoload.Diagnostics(errs))
	}
	ps.compiler = c

	opts := []func(*rego.Rego){
		rego.Compiler(c),
		rego.Store(ps.store),
		rego.Capabilities(caps), // allow_net, for http.send given by a capabilities file
		rego.StrictBuiltinErrors(true),
		rego.GenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t.Value, nil }),
	}
	if printHook != nil {
		opts = append(opts, rego.EnablePrintStatements(true), rego.PrintHook(printFunc(printHook)))
	}
	prepare := func(q string) (rego.PreparedEvalQuery, error) {
		return rego.New(append([]func(*rego.Rego){rego.Query(q)}, opts...)...).PrepareForEval(ctx)
	}
	ps.prompts = defines(c, data, refPrompts)
	grantQuery := wrapQuery("g", refGranted)
	if ps.prompts {
		grantQuery += "; " + wrapQuery("p", refPrompts)
	}
	if ps.grantQ, err = prepare(grantQuery); err != nil {
		return nil, fmt.Errorf("prepare grant query: %w", err)
	}
	if defines(c, data, refResource) {
		q, err := prepare(wrapQuery("r", refResource))
		if err != nil {
			return nil, fmt.Errorf("prepare resource query: %w", err)
		}
		ps.resourceQ = &q
	}
	if ps.explainQ, err = prepare(ps.provenanceQuery([]ast.Ref{refGranted}, grantQuery, wrapQuery("d", refDecided))); err != nil {
		return nil, fmt.Errorf("prepare explain query: %w", err)
	}
	callExprs := []string{wrapQuery("deny", refDeny), wrapQuery("result", refResult), wrapQuery("approval", refApproval), wrapQuery("confirm", refConfirm)}
	if ps.limitRules {
		callExprs = append(callExprs, wrapQuery("limit", refLimit))
	}
	if ps.callQ, err = prepare(ps.provenanceQuery(callRefs, callExprs...)); err != nil {
		return nil, fmt.Errorf("prepare call query: %w", err)
	}
	if ps.resultRules {
		if ps.resultQ, err = prepare(ps.provenanceQuery(resultRefs, wrapQuery("deny", refResultDeny), wrapQuery("redact", refRedact))); err != nil {
			return nil, fmt.Errorf("prepare result query: %w", err)
		}
	}
	if ps.prompts {
		// The split evaluates granted alone; a policy that also decides
		// prompts is evaluated whole (or memoised, when cacheable).
		ps.splitWhy = "data.toolgate.grant.prompts is defined"
	} else {
		ps.split, ps.splitWhy = newSplitGrant(ctx, modules, c, newCompiler, opts)
	}
	return ps, nil
}

// defines reports whether ref may be defined: a rule at or below it, or a
// data document under it.
func defines(c *ast.Compiler, data map[string]any, ref ast.Ref) bool {
	if len(c.GetRulesForVirtualDocument(ref)) > 0 || len(c.GetRulesWithPrefix(ref)) > 0 {
		return true
	}
	var node any = data
	for _, t := range ref[1:] {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		key, _ := t.Value.(ast.String)
		if node, ok = m[string(key)]; !ok {
			return false
		}
	}
	return true
}

// wrapQuery binds v to an array holding the value of ref, or to [] when ref
// is undefined: the query itself is then always defined, and undefined can
// be told apart from an empty set.
func wrapQuery(v string, ref ast.Ref) string {
	return fmt.Sprintf("%s := [x | x := %s]", v, ref)
}

// provenanceQuery joins exprs with one binding per provenance copy of a
// rule that defines one of targets.
func (ps *policySet) provenanceQuery(targets []ast.Ref, exprs ...string) string {
	for i := range ps.prov {
		p := &ps.prov[i]
		if !refIn(p.target, targets) {
			continue
		}
		exprs = append(exprs, wrapQuery(p.binding, p.ref))
	}
	return strings.Join(exprs, "; ")
}

// refIn reports whether ref is one of refs.
func refIn(ref ast.Ref, refs []ast.Ref) bool {
	for _, r := range refs {
		if ref.Equal(r) {
			return true
		}
	}
	return false
}

// addProvenance adds to each module, for every rule that defines a watched
// ref, a copy of that rule under a generated name in the same package, so
// its references resolve alike. Evaluating a copy tells what that one rule
// produced.
func addProvenance(modules map[string]*ast.Module) []provenance {
	var out []provenance
	appendRules(modules, func(m *ast.Module, r *ast.Rule) []*ast.Rule {
		var added []*ast.Rule
		abs := rulePath(r)
		for _, target := range watchedRefs {
			if !abs.Equal(target) {
				continue
			}
			i := len(out)
			name := ast.Var(regoload.CopyPrefix + string(target[len(target)-1].Value.(ast.String)) + "_" + strconv.Itoa(i))
			cp := r.Copy()
			for rr := cp; rr != nil; rr = rr.Else {
				rr.Head.Name = name
				rr.Head.Reference = ast.Ref{ast.VarTerm(string(name))}
			}
			cp.Module = m
			added = append(added, cp)
			out = append(out, provenance{
				target:  target,
				ref:     m.Package.Path.Append(ast.StringTerm(string(name))),
				loc:     locationOf(r.Location),
				dflt:    r.Default,
				binding: "p" + strconv.Itoa(i),
			})
		}
		return added
	})
	return out
}

// appendRules calls derive for each rule of each module, the modules in
// the order of their names (so that generated names and their numbers are
// the same at every load), and appends to each module the rules derive
// returned for its rules. derive sees only the rules a module had before.
func appendRules(modules map[string]*ast.Module, derive func(m *ast.Module, r *ast.Rule) []*ast.Rule) {
	for _, name := range slices.Sorted(maps.Keys(modules)) {
		m := modules[name]
		var added []*ast.Rule
		for _, r := range m.Rules {
			added = append(added, derive(m, r)...)
		}
		m.Rules = append(m.Rules, added...)
	}
}

// printFunc adapts a function to OPA's print hook, for print() in policies.
type printFunc func(string)

func (f printFunc) Print(_ print.Context, msg string) error {
	f(msg)
	return nil
}
