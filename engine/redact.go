package engine

import (
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/diag"
)

// Redaction (docs/contract.md §18): data.toolgate.result.redact is a set of
// RE2 regular expressions. Those a policy writes as constants are compiled
// once per revision, at load, where an invalid one is a load error naming
// it; those it computes per call (from the input, from data) are compiled
// when the call produces them, and one that does not compile fails that
// call. Either way no pattern is compiled twice while the revision serves
// (up to maxDynamicPatterns computed ones).

// maxDynamicPatterns bounds the computed patterns a revision keeps
// compiled: a policy that builds a pattern from each call's arguments
// must not grow the cache without end. Past it, patterns are compiled per
// call.
const maxDynamicPatterns = 1024

// patternCache holds the computed patterns compiled so far.
type patternCache struct {
	mu sync.Mutex
	m  map[string]*regexp.Regexp
}

// pattern returns the compiled pattern s: a constant one of the revision,
// a computed one compiled before, or s compiled now.
func (ps *policySet) pattern(s string) (*regexp.Regexp, error) {
	if re, ok := ps.patterns[s]; ok {
		return re, nil
	}
	c := &ps.dynamic
	c.mu.Lock()
	re, ok := c.m[s]
	c.mu.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*regexp.Regexp{}
	}
	if len(c.m) < maxDynamicPatterns {
		c.m[s] = re
	}
	c.mu.Unlock()
	return re, nil
}

// constantPatterns compiles every regular expression that a redact rule
// (or the data document at toolgate.result.redact) holds as a constant: a
// ground key of `redact contains "..."`, the strings of a ground set
// `redact := {...}`. It returns them by source text, and a diagnostic for
// each that does not compile, naming it and where it is.
func constantPatterns(modules map[string]*ast.Module, data map[string]any) (map[string]*regexp.Regexp, []diag.Diagnostic) {
	out := map[string]*regexp.Regexp{}
	var ds []diag.Diagnostic
	add := func(s string, loc *ast.Location) {
		if _, ok := out[s]; ok {
			return
		}
		re, err := regexp.Compile(s)
		if err != nil {
			d := diag.Diagnostic{Code: "rego_regex_error", Message: fmt.Sprintf("%s: invalid regular expression %q: %v", refRedact, s, err)}
			if loc != nil {
				d.File, d.Line, d.Column = loc.File, loc.Row, loc.Col
			}
			ds = append(ds, d)
			return
		}
		out[s] = re
	}
	strs := func(t *ast.Term, loc *ast.Location) {
		if t == nil || !t.IsGround() {
			return
		}
		switch v := t.Value.(type) {
		case ast.String:
			add(string(v), loc)
		case ast.Set:
			v.Foreach(func(e *ast.Term) {
				if s, ok := e.Value.(ast.String); ok {
					add(string(s), loc)
				}
			})
		}
	}
	for _, m := range sortedModules(modules) {
		for _, r := range m.Rules {
			if !rulePath(r).Equal(refRedact) {
				continue
			}
			for rr := r; rr != nil; rr = rr.Else {
				loc := rr.Location
				if rr.Head.Key != nil {
					strs(rr.Head.Key, loc)
				} else if _, ok := rr.Head.Value.Value.(ast.Set); ok {
					strs(rr.Head.Value, loc)
				}
			}
		}
	}
	if tg, ok := data["toolgate"].(map[string]any); ok {
		if res, ok := tg["result"].(map[string]any); ok {
			if list, ok := res["redact"].([]any); ok {
				for _, e := range list {
					if s, ok := e.(string); ok {
						add(s, nil)
					}
				}
			}
		}
	}
	return out, ds
}

// sortedModules are the modules in the order of their names, so that
// diagnostics come out in one order.
func sortedModules(modules map[string]*ast.Module) []*ast.Module {
	names := make([]string, 0, len(modules))
	for n := range modules {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*ast.Module, len(names))
	for i, n := range names {
		out[i] = modules[n]
	}
	return out
}
