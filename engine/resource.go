package engine

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/toolgate/toolgate/toolcall"
)

// Resource is one resource of an upstream as a decision sees it:
// input.resource (docs/contract.md §16).
type Resource struct {
	URI      string
	Name     string
	MIMEType string
	// Upstream is the name of the upstream that lists it.
	Upstream string
	// Section is its upstream's section: the base decision follows it.
	Section string
	// Template is the URI template that matched the URI, "" (null) for a
	// listed resource.
	Template string
}

// ResourceDecision is the one decision on whether a caller may see and
// read (subscribe to, complete) a resource: listing reads it leniently
// (Visible), the other methods strictly (Allowed).
type ResourceDecision struct {
	// Outcome is NoOverride when data.toolgate.grant.resource is undefined
	// (the base decision, from the upstream's section, stands), Override
	// when defined, Failed when evaluating it failed, Nobody for nobody.
	Outcome Outcome
	// Allowed is the strict reading: false when Failed.
	Allowed bool
	// Base is the base decision.
	Base bool
	// Err is the failure, a *PolicyError, when Outcome is Failed.
	Err error
}

// Visible is the lenient reading: a failed decision falls back to the base
// decision.
func (d ResourceDecision) Visible() bool {
	if d.Outcome == Failed {
		return d.Base
	}
	return d.Allowed
}

var (
	keyResource = ast.StringTerm("resource")
	keyMIMEType = ast.StringTerm("mimeType")
	keyTemplate = ast.StringTerm("template")
)

// ResourcesDecided reports whether the revision's policies may define
// data.toolgate.grant.resource; without it every resource decision is the
// base decision and evaluates nothing.
func (r *Revision) ResourcesDecided() bool { return r.policies.resourceQ != nil }

// GrantResource decides whether caller c may see and read res: the base
// decision of res.Section, overridden by data.toolgate.grant.resource when
// that is defined — a boolean, evaluated with the input document of req
// plus input.resource. Anything but a boolean fails the decision.
func (r *Revision) GrantResource(ctx context.Context, c *toolcall.Caller, req Request, res *Resource) ResourceDecision {
	if c == nil {
		return ResourceDecision{Outcome: Nobody}
	}
	d := ResourceDecision{Base: BaseSection(r.reg, res.Section, c)}
	q := r.policies.resourceQ
	if q == nil {
		d.Outcome, d.Allowed = NoOverride, d.Base
		return d
	}
	in, err := r.input(c, r.view(c), &req, -1)
	if err != nil {
		d.Outcome, d.Err = Failed, inputError(refResource, err)
		return d
	}
	in.(ast.Object).Insert(keyResource, resourceTerm(res))
	rs, err := r.eval(ctx, *q, in)
	if err != nil {
		d.Outcome, d.Err = Failed, policyError(refResource, err, ctx)
		return d
	}
	arr := rs[0].Bindings["r"].(*ast.Array)
	if arr.Len() == 0 {
		d.Outcome, d.Allowed = NoOverride, d.Base
		return d
	}
	b, ok := arr.Elem(0).Value.(ast.Boolean)
	if !ok {
		d.Outcome, d.Err = Failed, typeError(refResource, "resource must be a boolean, got %s %s", ast.ValueName(arr.Elem(0).Value), arr.Elem(0).Value)
		return d
	}
	d.Outcome, d.Allowed = Override, bool(b)
	return d
}

func resourceTerm(res *Resource) *ast.Term {
	str := func(s string) *ast.Term {
		if s == "" {
			return ast.NullTerm()
		}
		return ast.StringTerm(s)
	}
	return ast.ObjectTerm(
		[2]*ast.Term{keyURI, ast.StringTerm(res.URI)},
		[2]*ast.Term{keyName, str(res.Name)},
		[2]*ast.Term{keyMIMEType, str(res.MIMEType)},
		[2]*ast.Term{keyUpstream, ast.StringTerm(res.Upstream)},
		[2]*ast.Term{keyTemplate, str(res.Template)},
	)
}

// ResourceInputDocument returns, as JSON, the input document a resource
// decision evaluates (what `toolgate explain --resource` shows).
func (r *Revision) ResourceInputDocument(c *toolcall.Caller, req Request, res *Resource) ([]byte, error) {
	doc, err := r.InputDocument(c, req, false)
	if err != nil || c == nil {
		return doc, err
	}
	v, err := ast.ValueFromReader(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	v.(ast.Object).Insert(keyResource, resourceTerm(res))
	j, err := ast.JSON(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}
