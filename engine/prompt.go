package engine

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// Prompts are governed as tools are, by the same one decision
// (docs/contract.md §16): input.prompts lists the imported prompts with
// their base decision, and data.toolgate.grant.prompts, when defined, is
// the set of prompt names the caller may see and get.

// buildPrompts builds the revision's prompt objects, once per base flag.
func (r *Revision) buildPrompts() error {
	n := len(r.reg.Prompts)
	r.promptIndex = make(map[string]int, n)
	r.promptObjects = [2][]*ast.Term{make([]*ast.Term, n), make([]*ast.Term, n)}
	for i := range r.reg.Prompts {
		p := &r.reg.Prompts[i]
		r.promptIndex[p.Name] = i
		section := ast.NullTerm()
		if p.Section != "" {
			section = ast.StringTerm(p.Section)
		}
		args := make([]*ast.Term, len(p.Arguments))
		for k, a := range p.Arguments {
			args[k] = ast.ObjectTerm(
				[2]*ast.Term{keyName, ast.StringTerm(a.Name)},
				[2]*ast.Term{keyDescription, ast.StringTerm(a.Description)},
				[2]*ast.Term{keyRequired, ast.BooleanTerm(a.Required)},
			)
		}
		for b := range 2 {
			t := ast.ObjectTerm(
				[2]*ast.Term{keyName, ast.StringTerm(p.Name)},
				[2]*ast.Term{keyUpstream, ast.StringTerm(p.Upstream)},
				[2]*ast.Term{keySection, section},
				[2]*ast.Term{keyBase, ast.BooleanTerm(b == 1)},
				[2]*ast.Term{keyDescription, ast.StringTerm(p.Description)},
				[2]*ast.Term{keyArguments, ast.ArrayTerm(args...)},
			)
			freeze(t.Value)
			r.promptObjects[b][i] = t
		}
	}
	return nil
}

// viewPrompts adds the caller's base decision per prompt and its
// input.prompts to v.
func (r *Revision) viewPrompts(v *callerView, c *toolcall.Caller) {
	n := len(r.reg.Prompts)
	if n == 0 {
		v.prompts = ast.ArrayTerm()
		return
	}
	v.promptBase = make([]bool, n)
	objs := make([]*ast.Term, n)
	for i := range r.reg.Prompts {
		v.promptBase[i] = BaseSection(r.reg, r.reg.Prompts[i].Section, c)
		b := 0
		if v.promptBase[i] {
			b = 1
		}
		objs[i] = r.promptObjects[b][i]
	}
	v.prompts = ast.ArrayTerm(objs...)
}

// BaseSection is the base decision (docs/contract.md §2) for something in
// section ("" : no section) for caller c.
func BaseSection(reg *registry.Registry, section string, c *toolcall.Caller) bool {
	return Base(reg, &registry.Tool{Section: section}, c)
}

// Prompt returns the imported prompt named name, or nil.
func (r *Revision) Prompt(name string) *registry.Prompt {
	if i, ok := r.promptIndex[name]; ok {
		return &r.reg.Prompts[i]
	}
	return nil
}

// catalogRequest adds to the request object of a prompts or resources
// method what it names: the prompt and its arguments, or the URI.
func catalogRequest(kv [][2]*ast.Term, req *Request) ([][2]*ast.Term, error) {
	if req.Prompt != "" || req.Method == MethodPromptsGet {
		kv = append(kv, [2]*ast.Term{keyPrompt, ast.StringTerm(req.Prompt)})
	}
	if req.Method == MethodPromptsGet {
		args, err := argumentsValue(req.Arguments)
		if err != nil {
			return nil, err
		}
		kv = append(kv, [2]*ast.Term{keyArguments, ast.NewTerm(args)})
	}
	if req.URI != "" || req.Method == MethodResourcesRead || req.Method == MethodSubscribe || req.Method == MethodUnsubscribe {
		kv = append(kv, [2]*ast.Term{keyURI, ast.StringTerm(req.URI)})
	}
	return kv, nil
}

// promptGrant is the prompts part of a grant decision: whether
// data.toolgate.grant.prompts was defined, and its set.
type promptGrant struct {
	override bool
	set      ast.Set
}

// readPrompts reads the wrapped value of data.toolgate.grant.prompts (nil:
// the query did not ask for it). A value that is not a set of strings fails
// the whole decision.
func (r *Revision) readPrompts(d *GrantDecision, b any) {
	arr, _ := b.(*ast.Array)
	if arr == nil || arr.Len() == 0 || d.Outcome == Failed {
		return
	}
	set, ok := arr.Elem(0).Value.(ast.Set)
	if !ok {
		d.Outcome, d.Err = Failed, typeError(refPrompts, "prompts must be a set of prompt names, got %s", ast.ValueName(arr.Elem(0).Value))
		return
	}
	if bad := firstNonString(set); bad != nil {
		d.Outcome, d.Err = Failed, typeError(refPrompts, "prompts must hold strings only, got %s %s", ast.ValueName(bad), bad)
		return
	}
	d.prompts = promptGrant{override: true, set: set}
}

// PromptsOverride reports whether data.toolgate.grant.prompts was defined
// for this decision.
func (d *GrantDecision) PromptsOverride() bool { return d.prompts.override }

// PromptAllowed is the strict reading used by prompts/get: whether the
// named prompt may be got. It returns the failure when the policy failed.
// A name no imported prompt has is never allowed.
func (d *GrantDecision) PromptAllowed(name string) (bool, error) {
	switch d.Outcome {
	case Failed:
		return false, d.Err
	case Nobody:
		return false, nil
	}
	i, ok := d.Revision.promptIndex[name]
	if !ok {
		return false, nil
	}
	return d.promptRow(i), nil
}

func (d *GrantDecision) promptRow(i int) bool {
	if d.prompts.override && d.Outcome != Failed {
		return d.prompts.set.Contains(ast.StringTerm(d.Revision.reg.Prompts[i].Name))
	}
	return d.view != nil && d.view.promptBase[i]
}

// VisiblePrompts returns the indexes in Registry().Prompts of the prompts
// the lenient reading grants (prompts/list): like PromptAllowed, but a
// failed policy falls back to the base decision.
func (d *GrantDecision) VisiblePrompts() []int {
	if d.Outcome == Nobody {
		return nil
	}
	var out []int
	for i := range d.Revision.reg.Prompts {
		if d.promptRow(i) {
			out = append(out, i)
		}
	}
	return out
}
