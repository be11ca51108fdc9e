package engine

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/regoload"
)

// PolicyModules returns the revision's compiled policy modules by file
// name, for tools that read how the policies are written (toolgate check:
// which packages and rules they define, which rules have a default). The
// rules the engine adds to tell which rule produced what are left out.
// The modules' rules are shared with the revision: they must not be
// modified. Nil when the revision has no policies.
func (r *Revision) PolicyModules() map[string]*ast.Module {
	if r.policies == nil || r.policies.compiler == nil {
		return nil
	}
	out := make(map[string]*ast.Module, len(r.policies.compiler.Modules))
	for name, m := range r.policies.compiler.Modules {
		cp := *m
		cp.Rules = make([]*ast.Rule, 0, len(m.Rules))
		for _, rule := range m.Rules {
			if !strings.HasPrefix(string(rule.Head.Name), regoload.CopyPrefix) {
				cp.Rules = append(cp.Rules, rule)
			}
		}
		out[name] = &cp
	}
	return out
}
