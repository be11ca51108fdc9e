package engine

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// callerRoles is the reference a policy reads a caller's roles at.
var callerRoles = ast.MustParseRef("input.caller.roles")

// PolicyRoles returns the role names the revision's policies compare a
// caller's roles with, sorted: the string literals of every expression
// that reads input.caller.roles ("contractor" in input.caller.roles,
// input.caller.roles[_] == "ops"). A role reached only through a variable
// or a data document is not found: this is for tools that try role
// combinations (toolgate check), not a decision.
func (r *Revision) PolicyRoles() []string {
	if r.policies == nil || r.policies.compiler == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, m := range r.policies.compiler.Modules {
		ast.WalkBodies(m, func(b ast.Body) bool {
			rolesLiterals(b, seen)
			return false
		})
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// rolesLiterals adds to seen the string literals of the expressions of b
// that read input.caller.roles, directly or through a variable the body
// binds to it (the compiler rewrites `"x" in input.caller.roles` as
// `__local0__ = input.caller.roles; internal.member_2("x", __local0__)`).
func rolesLiterals(b ast.Body, seen map[string]bool) {
	aliases := map[ast.Var]bool{}
	for _, e := range b {
		if !e.IsEquality() && !e.IsAssignment() {
			continue
		}
		ops := e.Operands()
		for k := range 2 {
			if ref, ok := ops[k].Value.(ast.Ref); ok && ref.HasPrefix(callerRoles) {
				if v, ok := ops[1-k].Value.(ast.Var); ok {
					aliases[v] = true
				}
			}
		}
	}
	for _, e := range b {
		reads := false
		ast.WalkTerms(e, func(t *ast.Term) bool {
			switch v := t.Value.(type) {
			case ast.Ref:
				head, _ := v[0].Value.(ast.Var)
				reads = reads || v.HasPrefix(callerRoles) || aliases[head]
			case ast.Var:
				reads = reads || aliases[v]
			}
			return reads
		})
		if !reads {
			continue
		}
		// The literals of the expression, not the keys of its references
		// ("caller", "roles" of input.caller.roles).
		ast.NewGenericVisitor(func(x any) bool {
			switch v := x.(type) {
			case ast.Ref:
				return true
			case *ast.Term:
				if s, ok := v.Value.(ast.String); ok && s != "" {
					seen[string(s)] = true
				}
			}
			return false
		}).Walk(e)
	}
}
