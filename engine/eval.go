package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/toolgate/toolgate/toolcall"
)

// Grant evaluates the grant decision for a caller and request. It never
// returns nil; for a nil caller the Outcome is Nobody and no policy is asked.
//
// When the revision is cacheable (see DecisionMode), the decision is
// memoised per caller: a later Grant for a caller with the same subject,
// roles and claims returns the same *GrantDecision, whatever the request,
// without building an input or evaluating anything. A failed decision is
// never memoised. Calls for one caller that arrive while its decision is
// being evaluated wait for that evaluation rather than run their own, each
// under its own context; a failure of the evaluating call's own (its
// context ended, or its deadline passed) is not theirs: they evaluate
// again. The returned value is shared and must not be modified.
//
// Otherwise, when the policy can be split (DecisionMode says "split"), the
// part of the closure of granted that depends on the revision and the
// caller alone is evaluated once per caller and kept in an LRU bounded like
// the decision cache (DefaultDecisionCacheSize callers); each call then
// evaluates the rest. The answer is the one a whole evaluation gives,
// failures included. WithDecisionCache(false) evaluates every decision
// whole.
func (r *Revision) Grant(ctx context.Context, c *toolcall.Caller, req Request) *GrantDecision {
	if c == nil {
		return r.nobody
	}
	if sp := recordingSpan(ctx, SpanGrant); sp != nil {
		return r.tracedGrant(ctx, sp, c, req)
	}
	dc := r.decisions
	if dc == nil {
		if sg := r.split(); sg != nil {
			var buf [192]byte
			return r.grantSplit(ctx, sg, c, &req, c.AppendFingerprint(buf[:0]))
		}
		return r.grant(ctx, c, &req)
	}
	// A memoised decision is answered without building an input, but the
	// arguments of a call must still be representable exactly (docs/contract.md §3):
	// otherwise a policy that reads them would have been asked about others.
	if req.Method == MethodCall {
		if err := CheckArguments(req.Arguments); err != nil {
			return r.inputFailed(c, err)
		}
	}
	var buf [192]byte
	key := c.AppendFingerprint(buf[:0])
	if d := dc.Get(key); d != nil {
		return d
	}
	return r.grantOnce(ctx, c, &req, key)
}

// grant evaluates the grant decision for a signed-in caller.
func (r *Revision) grant(ctx context.Context, c *toolcall.Caller, req *Request) *GrantDecision {
	d, _ := r.evalGrant(ctx, r.policies.grantQ, c, req)
	return d
}

// evalGrant evaluates q, a grant query binding g, for a signed-in caller;
// it returns the decision and, unless the evaluation failed, the bindings.
func (r *Revision) evalGrant(ctx context.Context, q rego.PreparedEvalQuery, c *toolcall.Caller, req *Request) (*GrantDecision, rego.Vars) {
	d := &GrantDecision{Revision: r}
	d.view = r.view(c)
	in, err := r.input(c, d.view, req, -1)
	if err != nil {
		d.Outcome, d.Err = Failed, inputError(refGranted, err)
		return d, nil
	}
	rs, err := r.eval(ctx, q, in)
	if err != nil {
		d.Outcome, d.Err = Failed, policyError(refGranted, err, ctx)
		return d, nil
	}
	r.readGranted(d, rs[0].Bindings["g"])
	if r.policies.prompts {
		r.readPrompts(d, rs[0].Bindings["p"])
	}
	return d, rs[0].Bindings
}

// inputFailed is the failed decision for a request whose input cannot be
// built.
func (r *Revision) inputFailed(c *toolcall.Caller, err error) *GrantDecision {
	return &GrantDecision{Revision: r, view: r.view(c), Outcome: Failed, Err: inputError(refGranted, err)}
}

// readGranted sets the outcome from the wrapped value of granted.
func (r *Revision) readGranted(d *GrantDecision, b any) {
	arr := b.(*ast.Array)
	if arr.Len() == 0 {
		d.Outcome = NoOverride
		return
	}
	set, ok := arr.Elem(0).Value.(ast.Set)
	if !ok {
		d.Outcome, d.Err = Failed, typeError(refGranted, "granted must be a set of tool names, got %s", ast.ValueName(arr.Elem(0).Value))
		return
	}
	// Every element must be a string. When every element names a row, an
	// intersection (a pass in the set's own order) proves it; iterating the
	// set would sort it first.
	if set.Len() > 0 && set.Intersect(r.rowNames).Len() != set.Len() {
		if bad := firstNonString(set); bad != nil {
			d.Outcome, d.Err = Failed, typeError(refGranted, "granted must hold strings only, got %s %s", ast.ValueName(bad), bad)
			return
		}
	}
	d.Outcome, d.granted = Override, set
}

// firstNonString returns the first element of set, in the set's order,
// that is not a string; nil when every one is.
func firstNonString(set ast.Set) ast.Value {
	var bad ast.Value
	set.Foreach(func(t *ast.Term) {
		if _, ok := t.Value.(ast.String); !ok && bad == nil {
			bad = t.Value
		}
	})
	return bad
}

// Call evaluates the toolgate.call rules for an accepted call of the named
// row. The caller is signed in (a call by nobody never gets here).
func (r *Revision) Call(ctx context.Context, c *toolcall.Caller, req Request) *CallDecision {
	if sp := recordingSpan(ctx, SpanRules); sp != nil {
		return r.tracedCall(ctx, sp, c, req)
	}
	d := &CallDecision{Revision: r}
	if !r.policies.callRules {
		return d // nothing can deny or answer
	}
	in, err := r.callInput(c, &req)
	if err != nil {
		d.Err = inputError(refDeny, err)
		return d
	}
	rs, err := r.eval(ctx, r.policies.callQ, in)
	if err != nil {
		d.Err = policyError(refDeny, err, ctx)
		return d
	}
	b := rs[0].Bindings
	if arr := b["deny"].(*ast.Array); arr.Len() > 0 {
		if d.Deny, d.Err = readReasons(refDeny, arr.Elem(0).Value); d.Err != nil {
			return d
		}
	}
	if arr := b["result"].(*ast.Array); arr.Len() > 0 {
		obj, ok := arr.Elem(0).Value.(ast.Object)
		if !ok {
			d.Err = typeError(refResult, "result must be an object, got %s", ast.ValueName(arr.Elem(0).Value))
			return d
		}
		doc, err := ast.JSON(obj)
		if err == nil {
			d.Result, err = json.Marshal(doc)
		}
		if err != nil {
			d.Err = typeError(refResult, "result: %v", err)
			return d
		}
	}
	if arr := b["approval"].(*ast.Array); arr.Len() > 0 {
		if d.Approval, err = readApproval(arr.Elem(0).Value); err != nil {
			d.Err = err
			return d
		}
	}
	if arr, _ := b["limit"].(*ast.Array); arr != nil && arr.Len() > 0 { // bound only when a rule defines limit
		if d.Limits, err = readLimits(arr.Elem(0).Value); err != nil {
			d.Err = err
			return d
		}
	}
	if arr := b["confirm"].(*ast.Array); arr.Len() > 0 {
		s, ok := arr.Elem(0).Value.(ast.String)
		if !ok || s == "" {
			d.Err = typeError(refConfirm, "confirm must be a non-empty string, got %s %s", ast.ValueName(arr.Elem(0).Value), arr.Elem(0).Value)
			return d
		}
		d.Confirm = string(s)
	}
	// Provenance: which rule produced each reason, the result, the
	// approval and the confirmation.
	for i := range r.policies.prov {
		p := &r.policies.prov[i]
		if !refIn(p.target, callRefs) {
			continue
		}
		arr, _ := b[p.binding].(*ast.Array)
		if arr == nil || arr.Len() == 0 {
			continue
		}
		val := arr.Elem(0).Value
		switch {
		case p.target.Equal(refDeny):
			if set, ok := val.(ast.Set); ok {
				addReasonRule(d.Deny, set, p.loc)
			}
		case p.target.Equal(refResult) && d.Result != nil:
			d.ResultRules = append(d.ResultRules, p.loc)
		case p.target.Equal(refApproval) && d.Approval != nil:
			d.Approval.Rules = append(d.Approval.Rules, p.loc)
		case p.target.Equal(refConfirm) && d.Confirm != "":
			d.ConfirmRules = append(d.ConfirmRules, p.loc)
		case p.target.Equal(refLimit) && len(d.Limits) > 0:
			set, ok := val.(ast.Set)
			if !ok {
				continue
			}
			set.Foreach(func(t *ast.Term) {
				l, err := readLimit(t.Value)
				if err != nil {
					return
				}
				for k := range d.Limits {
					if dl := &d.Limits[k]; dl.Key == l.Key && dl.Max == l.Max && dl.Per == l.Per && dl.Cost == l.Cost && dl.Reason == l.Reason {
						dl.Rules = appendLocation(dl.Rules, p.loc)
					}
				}
			})
		}
	}
	return d
}

// appendLocation appends l unless ls holds it.
// callInput is the input document of a call (or a result) of the named
// row: the row's index, and the caller's view of the rows when there is a
// caller.
func (r *Revision) callInput(c *toolcall.Caller, req *Request) (ast.Value, error) {
	var v *callerView
	if c != nil {
		v = r.view(c)
	}
	return r.input(c, v, req, r.ToolIndex(req.Tool))
}

// readReasons reads the value of a deny rule (ref names it in errors): a
// set of non-empty strings, the reasons sorted by message. When an element
// is not one, the error names the last such element, and the reasons are
// the strings read.
func readReasons(ref ast.Ref, v ast.Value) ([]Reason, error) {
	set, ok := v.(ast.Set)
	if !ok {
		return nil, typeError(ref, "deny must be a set of reasons, got %s", ast.ValueName(v))
	}
	var out []Reason
	var err error
	set.Foreach(func(t *ast.Term) {
		s, ok := t.Value.(ast.String)
		switch {
		case !ok:
			err = typeError(ref, "a deny reason must be a string, got %s %s", ast.ValueName(t.Value), t.Value)
		case s == "":
			err = typeError(ref, "a deny reason must not be empty")
		default:
			out = append(out, Reason{Message: string(s)})
		}
	})
	if err != nil {
		return out, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Message < out[j].Message })
	return out, nil
}

// addReasonRule adds loc to the rules of each reason that set holds.
func addReasonRule(reasons []Reason, set ast.Set, loc Location) {
	for k := range reasons {
		if set.Contains(ast.StringTerm(reasons[k].Message)) {
			reasons[k].Rules = append(reasons[k].Rules, loc)
		}
	}
}

func appendLocation(ls []Location, l Location) []Location {
	if slices.Contains(ls, l) {
		return ls
	}
	return append(ls, l)
}

// readApproval reads the value of data.toolgate.call.approval (docs/contract.md §13):
// an object with a non-empty string reason, a non-empty array of non-empty
// role strings approvers, and an optional positive duration string ttl.
// Anything else, also an unknown member, is a type error.
func readApproval(v ast.Value) (*Approval, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, typeError(refApproval, "approval must be an object, got %s", ast.ValueName(v))
	}
	a := &Approval{TTL: DefaultApprovalTTL}
	var err error
	obj.Foreach(func(k, val *ast.Term) {
		if err != nil {
			return
		}
		key, _ := k.Value.(ast.String)
		switch key {
		case "reason":
			s, ok := val.Value.(ast.String)
			if !ok || s == "" {
				err = typeError(refApproval, "approval.reason must be a non-empty string, got %s %s", ast.ValueName(val.Value), val.Value)
				return
			}
			a.Reason = string(s)
		case "approvers":
			arr, ok := val.Value.(*ast.Array)
			if !ok || arr.Len() == 0 {
				err = typeError(refApproval, "approval.approvers must be a non-empty array of roles, got %s %s", ast.ValueName(val.Value), val.Value)
				return
			}
			for i := range arr.Len() {
				s, ok := arr.Elem(i).Value.(ast.String)
				if !ok || s == "" {
					err = typeError(refApproval, "approval.approvers[%d] must be a non-empty string, got %s %s", i, ast.ValueName(arr.Elem(i).Value), arr.Elem(i).Value)
					return
				}
				a.Approvers = append(a.Approvers, string(s))
			}
		case "ttl":
			ttl, ok := positiveDuration(val.Value)
			if !ok {
				err = typeError(refApproval, "approval.ttl must be a positive duration string such as \"30m\", got %s %s", ast.ValueName(val.Value), val.Value)
				return
			}
			a.TTL = ttl
		default:
			err = typeError(refApproval, "approval has an unknown member %s", k.Value)
		}
	})
	if err != nil {
		return nil, err
	}
	if a.Reason == "" || len(a.Approvers) == 0 {
		return nil, typeError(refApproval, "approval needs a reason and approvers")
	}
	sort.Strings(a.Approvers)
	a.Approvers = slices.Compact(a.Approvers)
	return a, nil
}

// Explain evaluates the grant decision like Grant and also finds the rules
// that defined granted. It is slower than Grant and meant for tools such as
// `toolgate explain`, not the hot path.
func (r *Revision) Explain(ctx context.Context, c *toolcall.Caller, req Request) *GrantDecision {
	if c == nil {
		return &GrantDecision{Revision: r, Outcome: Nobody}
	}
	d, b := r.evalGrant(ctx, r.policies.explainQ, c, &req)
	if d.Outcome != Override {
		return d
	}
	var dflt []Location
	for i := range r.policies.prov {
		p := &r.policies.prov[i]
		if !p.target.Equal(refGranted) {
			continue
		}
		if arr, _ := b[p.binding].(*ast.Array); arr != nil && arr.Len() > 0 {
			if p.dflt {
				dflt = append(dflt, p.loc)
			} else {
				d.Rules = append(d.Rules, p.loc)
			}
		}
	}
	if len(d.Rules) == 0 {
		d.Rules = dflt
	}
	return d
}

// URLDriversDecided reports whether data.toolgate.grant.url_drivers_decided
// is true for the caller (docs/contract.md §7).
func (r *Revision) URLDriversDecided(ctx context.Context, c *toolcall.Caller) (bool, error) {
	if c == nil {
		return false, nil
	}
	v := r.view(c)
	in, err := r.input(c, v, &Request{Method: MethodList}, -1)
	if err != nil {
		return false, inputError(refDecided, err)
	}
	rs, err := r.eval(ctx, r.policies.explainQ, in)
	if err != nil {
		return false, policyError(refDecided, err, ctx)
	}
	arr := rs[0].Bindings["d"].(*ast.Array)
	return arr.Len() > 0 && arr.Elem(0).Value.Compare(ast.Boolean(true)) == 0, nil
}

// eval runs one prepared query under the revision's deadline.
func (r *Revision) eval(ctx context.Context, q rego.PreparedEvalQuery, input ast.Value, opts ...rego.EvalOption) (rego.ResultSet, error) {
	r.evals.Add(1)
	ctx, cancel := context.WithTimeout(ctx, r.opts.timeout)
	defer cancel()
	rs, err := q.Eval(ctx, append(opts, rego.EvalParsedInput(input))...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("query returned %d results, want 1", len(rs))
	}
	return rs, nil
}

// inputError is the failure of a decision whose input document cannot be
// built: no policy was asked.
func inputError(ref ast.Ref, err error) *PolicyError {
	return &PolicyError{Rule: ref.String(), Kind: KindInput, Message: err.Error(), Err: err}
}

func typeError(ref ast.Ref, format string, args ...any) *PolicyError {
	return &PolicyError{Rule: ref.String(), Kind: KindType, Message: fmt.Sprintf(format, args...)}
}

// policyError classifies an evaluation error; nothing of it is dropped.
func policyError(ref ast.Ref, err error, ctx context.Context) *PolicyError {
	pe := &PolicyError{Rule: ref.String(), Kind: KindEval, Message: err.Error(), Err: err}
	var te *topdown.Error
	if errors.As(err, &te) {
		pe.Code = te.Code
		pe.Location = locationOf(te.Location)
		pe.Message = te.Message // the location and code are fields of their own
		if te.Code == topdown.BuiltinErr {
			pe.Kind = KindBuiltin
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		pe.Kind = KindTimeout
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		pe.Kind = KindCanceled
	}
	return pe
}
