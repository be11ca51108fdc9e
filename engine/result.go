package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/toolcall"
)

// ResultDecision is the answer of the result rules (data.toolgate.result,
// docs/contract.md §18) for one result of a method or upstream: the
// revision that decided and what it decided.
type ResultDecision struct {
	Revision *Revision
	toolcall.ResultDecision
}

var (
	keyResult    = ast.StringTerm("result")
	errNotObject = errors.New("not a JSON object")
)

// HasResultRules reports whether the policies define a result rule
// (data.toolgate.result.deny or .redact): without one, results are
// answered as the method returned them and Result need not be asked.
func (r *Revision) HasResultRules() bool { return r.policies.resultRules }

// Result evaluates the result rules for the result of an accepted call of
// the named row. result is the result document, a JSON object (content,
// structuredContent, isError: see schema/input.schema.json), put beside
// the call's input as input.result; one that cannot be represented exactly
// is a failure. Result never returns nil.
func (r *Revision) Result(ctx context.Context, c *toolcall.Caller, req Request, result json.RawMessage) *ResultDecision {
	d := &ResultDecision{Revision: r}
	if !r.policies.resultRules {
		return d
	}
	in, err := r.callInput(c, &req)
	if err != nil {
		d.Err = inputError(refResultDeny, err)
		return d
	}
	doc, err := exactjson.Value(result)
	if err != nil {
		d.Err = inputError(refResultDeny, &InputError{Part: PartResult, Err: err})
		return d
	}
	if _, ok := doc.(ast.Object); !ok {
		d.Err = inputError(refResultDeny, &InputError{Part: PartResult, Err: errNotObject})
		return d
	}
	in.(ast.Object).Insert(keyResult, ast.NewTerm(doc))
	rs, err := r.eval(ctx, r.policies.resultQ, in)
	if err != nil {
		d.Err = policyError(refResultDeny, err, ctx)
		return d
	}
	b := rs[0].Bindings
	if arr := b["deny"].(*ast.Array); arr.Len() > 0 {
		if d.Deny, d.Err = readReasons(refResultDeny, arr.Elem(0).Value); d.Err != nil {
			return d
		}
	}
	if arr := b["redact"].(*ast.Array); arr.Len() > 0 {
		set, ok := arr.Elem(0).Value.(ast.Set)
		if !ok {
			d.Err = typeError(refRedact, "redact must be a set of regular expressions, got %s", ast.ValueName(arr.Elem(0).Value))
			return d
		}
		set.Foreach(func(t *ast.Term) {
			if err != nil {
				return
			}
			s, ok := t.Value.(ast.String)
			switch {
			case !ok:
				err = typeError(refRedact, "a redact pattern must be a string, got %s %s", ast.ValueName(t.Value), t.Value)
			case s == "":
				err = typeError(refRedact, "a redact pattern must not be empty")
			default:
				re, cerr := r.policies.pattern(string(s))
				if cerr != nil {
					err = typeError(refRedact, "invalid regular expression %q: %v", string(s), cerr)
					return
				}
				d.Redact = append(d.Redact, re)
			}
		})
		if err != nil {
			d.Err = err
			return d
		}
		sort.Slice(d.Redact, func(i, j int) bool { return d.Redact[i].String() < d.Redact[j].String() })
	}
	for i := range r.policies.prov {
		p := &r.policies.prov[i]
		arr, _ := b[p.binding].(*ast.Array)
		if !refIn(p.target, resultRefs) || arr == nil || arr.Len() == 0 {
			continue
		}
		set, ok := arr.Elem(0).Value.(ast.Set)
		if !ok {
			continue
		}
		switch {
		case p.target.Equal(refResultDeny):
			addReasonRule(d.Deny, set, p.loc)
		case p.target.Equal(refRedact) && set.Len() > 0:
			d.RedactRules = appendLocation(d.RedactRules, p.loc)
		}
	}
	return d
}
