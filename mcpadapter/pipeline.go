package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// The call pipeline of docs/contract.md §5 is written once, below. A served call
// (Adapter.Call) runs all of it; a dry run (DryRun, what `toolgate explain`
// prints) runs the same steps without their side effects: no Go hook, no
// approval store, no confirmation, no method. Both produce a Record.

// pipeline is what one run of the step machine may use.
type pipeline struct {
	// a is the serving adapter: its hooks, approvals and confirmation, and
	// the method runs. nil in a dry run.
	a *Adapter
	// methods resolve rows' methods; nil: the run stops before binding.
	methods methods.Set
	// locate evaluates the grant decision with the rules that defined it
	// (engine.Revision.Explain), for a dry run.
	locate bool
	// limits, in a dry run, is where the limits' counters are read
	// (Limits.Peek); nil: they are not read. (A served call counts in
	// a.opts.Limits.)
	limits Limits
	// result, in a dry run, is a result the method is taken to return:
	// the result rules run on it (docs/contract.md §18). nil: none.
	result *mcp.CallToolResult
	// peer: the method runs with the call's Peer in its context (a served
	// call with a session).
	peer bool
}

// callInput is one tools/call as the pipeline reads it.
type callInput struct {
	// req is the served request (the confirmation reads its session); nil
	// in a dry run.
	req *mcp.CallToolRequest
	// nameInvalid: the name is missing or neither a string nor an integer.
	nameInvalid bool
	name        string
	// args are the arguments as sent; bind says whether they are known (a
	// dry run without them stops before binding).
	args json.RawMessage
	bind bool
	// meta is the _meta as sent, raw.
	meta string
	// caller and rc are a dry run's caller and revision; a served call
	// asks its adapter for them (pipeline.caller, pipeline.revision), in
	// this order and only once the step before needs them. (Fields, not
	// closures: a closure here would be allocated for every call.)
	caller *toolcall.Caller
	rc     *revisionCache
	start  time.Time
}

// caller is who calls and the identity source that vouched for it: the
// adapter's Caller for a served call, the given one (SourceLocal) in a
// dry run.
func (p *pipeline) caller(ctx context.Context, in *callInput) (*toolcall.Caller, string) {
	if p.a == nil {
		return in.caller, SourceLocal
	}
	return p.a.opts.Caller(ctx, in.req)
}

// revision is the revision to decide with: the adapter's current one for
// a served call, the given one in a dry run.
func (p *pipeline) revision(in *callInput) *revisionCache {
	if p.a == nil {
		return in.rc
	}
	return p.a.revision()
}

// Call answers tools/call, step by step as docs/contract.md §5 says. It never returns a
// JSON-RPC error: every answer is a CallToolResult.
func (a *Adapter) Call(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	return a.call(ctx, req).Result
}

// call serves one tools/call and returns its record, after the after hooks
// and the observers have seen it.
func (a *Adapter) call(ctx context.Context, req *mcp.CallToolRequest) *Record {
	start := time.Now()
	p := req.Params
	if p == nil {
		p = &mcp.CallToolParamsRaw{}
	}
	w := wire.InfoOf(ctx, req)
	in := &callInput{
		req:         req,
		nameInvalid: w.NameInvalid,
		name:        p.Name,
		args:        p.Arguments,
		bind:        true,
		meta:        w.Meta,
		start:       start,
	}
	pl := &pipeline{a: a, methods: a.opts.Methods, peer: req.Session != nil}
	call, rec := pl.run(ctx, in)
	if call == nil {
		return rec // steps 1 and 2: no grant decision, nobody hears of it
	}
	rec.Duration = time.Since(start)
	// Every grant decision is observed (SPEC §14), the step 4 refusals
	// too: a hidden name and one no row has take the same path here.
	defer a.observeCall(ctx, call, rec)
	if rec.Stage == toolcall.StageUnknown {
		return rec // step 4: no hook hears of it
	}
	switch {
	case rec.Stage == toolcall.StageNotVerified:
		a.log.Error("tools/call: grant decision failed; refusing",
			slog.String("decision_id", call.DecisionID), slog.String("subject", call.Caller.Subject),
			slog.String("revision", call.Revision.String()), slog.Any("error", rec.Err))
	case rec.Failed:
		a.log.Error("tools/call failed",
			slog.String("decision_id", call.DecisionID), slog.String("tool", call.Name), slog.String("method", call.Method),
			slog.String("subject", call.Caller.Subject), slog.String("revision", call.Revision.String()), slog.Any("error", rec.Err))
	}
	// Step 8.
	a.runAfter(ctx, call, rec)
	return rec
}

// DryRunOptions is one tools/call for DryRun.
type DryRunOptions struct {
	// Revision is the registry and policies to decide with (required).
	Revision *engine.Revision
	// Caller is who calls; nil is nobody.
	Caller *toolcall.Caller
	// Name is the tool name as sent (an integer name as its decimal
	// string); NameInvalid says there is no usable one (step 1).
	Name        string
	NameInvalid bool
	// Arguments are the arguments as sent (anything but a JSON object is
	// {}, as served). Empty: they are not known, and the run stops before
	// binding them.
	Arguments json.RawMessage
	// Meta is the raw _meta of the request; it is bounded (docs/contract.md §3) first.
	Meta json.RawMessage
	// Methods resolve rows' methods, for binding the arguments; nil: the
	// run stops before binding.
	Methods methods.Set
	// Limits, when set, is read (never counted in) for the counters of
	// the call's rate limits: a limit that would refuse decides the run
	// (StageLimited). nil: the limits are only reported, in the
	// CallDecision.
	Limits Limits
	// Result, when set, is a result the method is taken to return: a call
	// that would run has the result rules applied to it, and the Record's
	// Result is what the caller would get (docs/contract.md §18).
	Result *mcp.CallToolResult
}

// DryRun decides a tools/call by the very steps Adapter.Call takes
// (docs/contract.md §5), without a side effect: the grant decision (located: its Rules
// say which rules defined an override), the toolgate.call rules and the
// argument binding run; Go hooks, the approval store, the confirmation and
// the method do not, and the limit store (DryRunOptions.Limits) is only
// read. A call an approval rule holds is StageHeld with the id "<id>"; one
// that would run is StageRun, with Bound when its arguments were bound,
// and with DryRunOptions.Result the result rules' verdict on that result.
// DryRun never returns nil; it is safe for concurrent use.
func DryRun(ctx context.Context, o DryRunOptions) *Record {
	rc := newRevisionCache(o.Revision)
	in := &callInput{
		nameInvalid: o.NameInvalid,
		name:        o.Name,
		args:        o.Arguments,
		bind:        len(o.Arguments) > 0,
		meta:        string(o.Meta),
		caller:      o.Caller,
		rc:          rc,
		start:       time.Now(),
	}
	pl := &pipeline{methods: o.Methods, locate: true, limits: o.Limits, result: o.Result}
	_, rec := pl.run(ctx, in)
	rec.Duration = time.Since(in.start)
	return rec
}

// run takes a call through steps 1 to 7. The CallContext is nil when the
// call ended before the grant decision (steps 1 and 2).
func (p *pipeline) run(ctx context.Context, in *callInput) (*CallContext, *Record) {
	rec := &Record{Dry: p.a == nil, Grant: GrantRecord{Row: -1}}
	// Step 1.
	if in.nameInvalid {
		rec.Stage, rec.Answerer, rec.Result = toolcall.StageNameRequired, Answerer{Kind: toolcall.ByGate}, TextResult(AnswerNameRequired, true)
		return nil, rec
	}
	name := in.name
	// Step 2.
	caller, source := p.caller(ctx, in)
	if caller == nil {
		rec.Grant.Outcome = engine.Nobody
		rec.Stage, rec.Answerer, rec.Result = toolcall.StageNobody, Answerer{Kind: toolcall.ByGate}, TextResult(AnswerUnknownTool(name), true)
		return nil, rec
	}
	rc := p.revision(in)
	rev := rc.rev
	args := normaliseArguments(in.args)
	ereq := engine.Request{Method: engine.MethodCall, Tool: name, Arguments: args, Meta: engine.BoundMeta(json.RawMessage(in.meta))}
	call := &CallContext{
		DecisionID: newDecisionID(),
		Name:       name,
		Arguments:  args,
		Meta:       ereq.Meta,
		Caller:     caller,
		Source:     source,
		Revision:   rev,
		Start:      in.start,
	}
	// Step 3: the grant decision, strictly. An unknown name runs it too.
	t := time.Now()
	var d *engine.GrantDecision
	if p.locate {
		d = rev.Explain(ctx, caller, ereq)
	} else {
		d = rev.Grant(ctx, caller, ereq)
	}
	rec.GrantTime = time.Since(t)
	rec.Decision = rec.GrantTime
	idx := rev.ToolIndex(name)
	rec.Grant = GrantRecord{Outcome: d.Outcome, Decision: d, Rules: d.Rules, Row: idx}
	allowed, err := d.Allowed(name)
	if err != nil {
		rec.Grant.Err, rec.Grant.Rules = err, failureRules(err)
		rec.fail(toolcall.StageNotVerified, Answerer{Kind: toolcall.ByGate, Rules: rec.Grant.Rules}, err)
		rec.Outcome, rec.Result = toolcall.OutcomeRefusedGate, TextResult(AnswerNotVerified, true)
		return call, rec
	}
	rec.Grant.Granted = allowed
	// Step 4: hidden is absent.
	if !allowed {
		rec.Stage, rec.Result = toolcall.StageUnknown, TextResult(AnswerUnknownTool(name), true)
		rec.Answerer = Answerer{Kind: toolcall.ByGate}
		if idx >= 0 && d.Outcome == engine.Override {
			rec.Answerer.Rules = d.Rules
		}
		return call, rec
	}
	row := &rev.Registry().Tools[idx]
	call.Tool, call.Method = row, row.Method
	p.accepted(ctx, in, call, rc, idx, &ereq, rec)
	return call, rec
}

// accepted runs steps 5 to 7 for a granted call.
func (p *pipeline) accepted(ctx context.Context, in *callInput, call *CallContext, rc *revisionCache, idx int, ereq *engine.Request, rec *Record) {
	// Step 5: before hooks, then the toolgate.call rules. Refusing wins.
	var (
		answer     *mcp.CallToolResult
		answerer   Answerer
		answeredBy string
		denier     Answerer
		deniedBy   string
	)
	if p.a != nil {
		for i := range p.a.hooks {
			h := &p.a.hooks[i]
			if h.Before == nil {
				continue
			}
			v, err := p.a.runBefore(ctx, h, call)
			if err == nil && v.Denied && v.Reason == "" {
				err = errors.New("denied with an empty reason")
			}
			if err != nil {
				rec.fail(toolcall.StageHookFailed, Answerer{Kind: toolcall.ByHook, Name: h.Name}, fmt.Errorf("before hook %q: %w", h.Name, err))
				return
			}
			switch {
			case v.Denied:
				rec.Denials = append(rec.Denials, Denial{Reason: v.Reason, Hook: h.Name})
				if deniedBy == "" {
					deniedBy, denier = h.Name, Answerer{Kind: toolcall.ByHook, Name: h.Name}
				}
			case v.Result != nil && answer == nil:
				answer, answeredBy, answerer = v.Result, h.Name, Answerer{Kind: toolcall.ByHook, Name: h.Name}
			}
		}
	}
	t := time.Now()
	cd := call.Revision.Call(ctx, call.Caller, *ereq)
	rec.RulesTime = time.Since(t)
	rec.Decision += rec.RulesTime
	rec.CallDecision = cd
	if cd.Err != nil {
		rec.fail(toolcall.StageRuleFailed, Answerer{Kind: toolcall.ByRule, Rules: failureRules(cd.Err)}, fmt.Errorf("toolgate.call rules: %w", cd.Err))
		return
	}
	for _, r := range cd.Deny {
		rec.Denials = append(rec.Denials, Denial{Reason: r.Message, Rules: r.Rules})
		if deniedBy == "" {
			deniedBy, denier = "policy", Answerer{Kind: toolcall.ByRule}
		}
		if denier.Kind == toolcall.ByRule {
			denier.Rules = appendNew(denier.Rules, r.Rules...)
		}
	}
	if len(rec.Denials) > 0 {
		reasons := make([]string, len(rec.Denials))
		for i, d := range rec.Denials {
			reasons[i] = d.Reason
		}
		rec.Stage, rec.Outcome, rec.Answerer, rec.AnsweredBy = toolcall.StageDenied, toolcall.OutcomeDenied, denier, deniedBy
		rec.Result, rec.Reasons = TextResult(strings.Join(reasons, "; "), true), reasons
		return
	}
	// Then the rate limits (docs/contract.md §18): a call they refuse is not
	// held for approval, nor answered.
	if len(cd.Limits) > 0 && p.limit(ctx, cd.Limits, rec) {
		return
	}
	// Then approval (docs/contract.md §13): it holds the call before anything answers.
	if cd.Approval != nil {
		if p.a == nil {
			rec.held(cd.Approval, "<id>") // the id is the approval store's
			return
		}
		if p.a.checkApproval(ctx, call, cd.Approval, rec) {
			return
		}
	}
	if answer == nil && cd.Result != nil {
		res, err := policyResult(cd.Result)
		if err != nil {
			rec.fail(toolcall.StageRuleFailed, Answerer{Kind: toolcall.ByRule, Rules: cd.ResultRules}, err)
			return
		}
		answer, answeredBy, answerer = res, "policy", Answerer{Kind: toolcall.ByRule, Rules: cd.ResultRules}
	}
	if answer != nil {
		rec.Stage, rec.Outcome, rec.Result, rec.AnsweredBy, rec.Answerer = toolcall.StageAnswered, toolcall.OutcomeAnswered, answer, answeredBy, answerer
		return
	}
	// The user confirms a call that will run.
	if cd.Confirm != "" {
		rec.Confirm = cd.Confirm
		if p.a != nil && p.a.confirm(ctx, in.req, call, cd.Confirm, rec) {
			return
		}
	}
	// Step 6: bind the arguments.
	row := call.Tool
	if p.methods == nil || !in.bind {
		rec.Stage = toolcall.StageRun // a dry run that does not know them
		p.dryResult(ctx, call, ereq, rec)
		return
	}
	binding := Answerer{Kind: toolcall.ByBinding}
	m, ok := p.methods.Method(row.Method)
	if !ok {
		rec.fail(toolcall.StageArguments, binding, fmt.Errorf("tool %s: no method %q is registered", row.Name, row.Method))
		return
	}
	schemas, err := rc.argSchemas(idx)
	if err != nil {
		rec.fail(toolcall.StageArguments, binding, err)
		return
	}
	args, err := bind(row, schemas, m, call.Arguments)
	var inv methods.Invocation
	if err == nil {
		inv, err = p.bindMethod(ctx, m, args)
		// The method names the argument; the answer is the row's.
		if ae := asArgumentError(err); ae != nil {
			if decl := declared(row, ae.Name); decl != nil {
				err = argumentError(decl, ae.Problem, ae.Err)
			}
		}
	}
	if err != nil {
		if ae := asArgumentError(err); ae != nil {
			rec.fail(toolcall.StageArguments, binding, ae)
			rec.Argument, rec.Result = ae, TextResult(ae.Message(), true)
			return
		}
		rec.fail(toolcall.StageArguments, binding, fmt.Errorf("bind arguments: %w", err))
		return
	}
	rec.Stage, rec.Bound, rec.Answerer = toolcall.StageRun, true, Answerer{Kind: toolcall.ByMethod, Name: row.Method}
	if p.a == nil {
		p.dryResult(ctx, call, ereq, rec) // a dry run runs no method
		return
	}
	// Step 7: run the method.
	t = time.Now()
	if p.peer {
		ctx = p.a.withPeer(ctx, in.req, call.Caller)
	}
	var res *mcp.CallToolResult
	err = safely(func() error {
		var err error
		res, err = inv(ctx)
		return err
	})
	rec.MethodTime = time.Since(t)
	if err == nil && res == nil {
		err = errors.New("method returned no result")
	}
	if err != nil {
		rec.fail(toolcall.StageRun, rec.Answerer, fmt.Errorf("method %s: %w", row.Method, err))
		return
	}
	rec.Outcome, rec.Result = toolcall.OutcomeResult, res
	if call.Revision.HasResultRules() {
		p.results(ctx, call, ereq, rec)
	}
}

// dryResult runs, in a dry run given a result, the result rules on it.
func (p *pipeline) dryResult(ctx context.Context, call *CallContext, ereq *engine.Request, rec *Record) {
	if p.result == nil {
		return
	}
	rec.Result = p.result
	if call.Revision.HasResultRules() {
		p.results(ctx, call, ereq, rec)
	}
}

// bindMethod binds args for m: a Go method whose binding only decodes
// into its parameter on the call's goroutine (a panic still an error),
// another as guard runs it.
func (p *pipeline) bindMethod(ctx context.Context, m methods.Method, args []toolcall.Arg) (methods.Invocation, error) {
	var inv methods.Invocation
	if methods.BindsPromptly(m) {
		err := safely(func() error {
			var err error
			inv, err = m.Bind(args)
			return err
		})
		return inv, err
	}
	return p.bindGuarded(ctx, m, args)
}

func (p *pipeline) bindGuarded(ctx context.Context, m methods.Method, args []toolcall.Arg) (methods.Invocation, error) {
	return pipelineGuard(ctx, p, func(context.Context) (methods.Invocation, error) {
		return m.Bind(args)
	})
}

// asArgumentError is the *ArgumentError in err's chain, or nil. (A
// function of its own: the target errors.As writes escapes, and is then
// allocated only for a call that failed.)
func asArgumentError(err error) *toolcall.ArgumentError {
	if err == nil {
		return nil
	}
	var ae *toolcall.ArgumentError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

// pipelineGuard runs f as p's served call runs a hook or a method's
// binding (with the hook deadline), or in a dry run with only the panic
// turned into an error.
func pipelineGuard[T any](ctx context.Context, p *pipeline, f func(context.Context) (T, error)) (T, error) {
	if p.a != nil {
		return guard(ctx, p.a.opts.HookTimeout, false, f)
	}
	var v T
	err := safely(func() error {
		var err error
		v, err = f(ctx)
		return err
	})
	return v, err
}

// fail ends the call with the generic internal error (docs/contract.md §5).
func (r *Record) fail(stage toolcall.Stage, by Answerer, err error) {
	r.Stage, r.Outcome, r.Answerer = stage, toolcall.OutcomeFailed, by
	r.Result, r.Err, r.Failed = TextResult(AnswerInternal, true), err, true
}

// held ends the call held for an approval under rule, request id.
func (r *Record) held(rule *engine.Approval, id string) {
	text := ApprovalRequired(rule.Reason, id)
	r.Stage, r.Outcome, r.Answerer, r.AnsweredBy = toolcall.StageHeld, toolcall.OutcomeHeld, Answerer{Kind: toolcall.ByApproval, Rules: rule.Rules}, "policy"
	r.Result, r.Reasons, r.ApprovalID = TextResult(text, true), []string{text}, id
}

// declared is the row's declared argument of that name, or nil.
func declared(t *registry.Tool, name string) *registry.Argument {
	for j := range t.Arguments {
		if t.Arguments[j].Name == name {
			return &t.Arguments[j]
		}
	}
	return nil
}

// failureRules is where a policy failure arose, when OPA said.
func failureRules(err error) []engine.Location {
	var pe *engine.PolicyError
	if errors.As(err, &pe) && pe.Location.File != "" {
		return []engine.Location{pe.Location}
	}
	return nil
}

// appendNew appends the locations ls does not hold yet.
func appendNew(ls []engine.Location, add ...engine.Location) []engine.Location {
	for _, l := range add {
		if !slices.Contains(ls, l) {
			ls = append(ls, l)
		}
	}
	return ls
}

// normaliseArguments returns the arguments as sent when they are a JSON
// object, else {}.
func normaliseArguments(raw json.RawMessage) json.RawMessage {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			if json.Valid(raw) {
				return raw
			}
		}
		break
	}
	return json.RawMessage("{}")
}
