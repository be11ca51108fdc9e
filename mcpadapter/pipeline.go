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
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// The call pipeline of docs/contract.md §5 is written once, below, as
// named steps. A served call (Adapter.Call) and a dry run (DryRun, what
// `toolgate explain` prints) take the same steps; what only a served call
// does (run the Go hooks, count in the limit store, ask the approval
// store and the user, run the method) is behind effects, which the steps
// call without asking which run they serve. Both produce a Record.

// pipeline is what one run of the step machine may use.
type pipeline struct {
	// fx are the side effects: served for a served call, *dryRun for a
	// dry run.
	fx effects
	// methods resolve rows' methods; nil: the run stops before binding.
	methods methods.Set
}

// callInput is one tools/call as the pipeline reads it.
type callInput struct {
	// req is the served request (the caller, the confirmation and the
	// method's Peer read it); nil in a dry run.
	req *mcp.CallToolRequest
	// nameInvalid: the name is missing or neither a string nor an integer.
	nameInvalid bool
	name        string
	// args are the arguments as sent; bind says whether they are known (a
	// dry run without them stops before binding).
	args json.RawMessage
	bind bool
	// meta is the _meta as sent, raw.
	meta  string
	start time.Time
}

// Call answers tools/call, step by step as docs/contract.md §5 says. It never returns a
// JSON-RPC error: every answer is a CallToolResult.
func (a *Adapter) Call(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	return a.call(ctx, req).Result
}

// call serves one tools/call and returns its record, after the after hooks
// and the observers have seen it.
func (a *Adapter) call(ctx context.Context, req *mcp.CallToolRequest) *hooks.Record {
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
	pl := &pipeline{fx: served{a}, methods: a.opts.Methods}
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
	case rec.Failed():
		a.log.Error("tools/call failed",
			slog.String("decision_id", call.DecisionID), slog.String("tool", call.Name), slog.String("method", call.Method),
			slog.String("subject", call.Caller.Subject), slog.String("revision", call.Revision.String()), slog.Any("error", rec.Err))
	}
	a.recordHistory(ctx, call, rec)
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
	// History is the caller's history, newest first, for a policy that
	// reads input.history (docs/contract.md §20); nil: none.
	History engine.History
	// Limits, when set, is read (never counted in) for the counters of
	// the call's rate limits: a limit that would refuse decides the run
	// (StageLimited). nil: the limits are only reported, in the
	// CallDecision.
	Limits hooks.Limits
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
func DryRun(ctx context.Context, o DryRunOptions) *hooks.Record {
	rec, _ := DryRunGrant(ctx, o)
	return rec
}

// DryRunGrant is DryRun that also returns the grant decision the dry run
// read (located), the one its Record's Grant tells of; nil when the call
// ended before step 3 (no name, nobody signed in, or the caller's
// history could not be read).
func DryRunGrant(ctx context.Context, o DryRunOptions) (*hooks.Record, *engine.GrantDecision) {
	in := &callInput{
		nameInvalid: o.NameInvalid,
		name:        o.Name,
		args:        o.Arguments,
		bind:        len(o.Arguments) > 0,
		meta:        string(o.Meta),
		start:       time.Now(),
	}
	fx := &dryRun{who: o.Caller, rc: newRevisionCache(o.Revision), store: o.Limits, taken: o.Result, hist: o.History}
	pl := &pipeline{fx: fx, methods: o.Methods}
	_, rec := pl.run(ctx, in)
	rec.Dry = true
	rec.Duration = time.Since(in.start)
	return rec, fx.granted
}

// run takes a call through steps 1 to 7. The CallContext is nil when the
// call ended before the grant decision (steps 1 and 2).
func (p *pipeline) run(ctx context.Context, in *callInput) (*hooks.CallContext, *hooks.Record) {
	rec := &hooks.Record{Grant: hooks.GrantRecord{Row: -1}}
	// Step 1.
	if in.nameInvalid {
		rec.Stage, rec.Answerer, rec.Result = toolcall.StageNameRequired, hooks.Answerer{Kind: toolcall.ByGate}, TextResult(AnswerNameRequired, true)
		return nil, rec
	}
	name := in.name
	// Step 2.
	caller, source := p.fx.caller(ctx, in.req)
	if caller == nil {
		rec.Grant.Outcome = engine.Nobody
		rec.Stage, rec.Answerer, rec.Result = toolcall.StageNobody, hooks.Answerer{Kind: toolcall.ByGate}, TextResult(AnswerUnknownTool(name), true)
		return nil, rec
	}
	rc := p.fx.revision()
	rev := rc.rev
	args := normaliseArguments(in.args)
	ereq := engine.Request{Method: engine.MethodCall, Tool: name, Arguments: args, Meta: engine.BoundMeta(json.RawMessage(in.meta))}
	call := &hooks.CallContext{
		DecisionID: newDecisionID(),
		Name:       name,
		Arguments:  args,
		Meta:       ereq.Meta,
		Caller:     caller,
		Source:     source,
		Revision:   rev,
		Start:      in.start,
	}
	// Step 3: the grant decision, strictly. An unknown name runs it too,
	// and loads the caller's history alike when the grant reads it.
	t := time.Now()
	if err := p.loadHistory(ctx, call, &ereq, rec, true); err != nil {
		rec.GrantTime = time.Since(t)
		fail(rec, toolcall.StageNotVerified, hooks.Answerer{Kind: toolcall.ByGate}, fmt.Errorf("history: %w", err))
		rec.Grant.Err = rec.Err
		rec.Outcome, rec.Result = toolcall.OutcomeRefusedGate, TextResult(AnswerNotVerified, true)
		return call, rec
	}
	d := p.fx.grant(ctx, rev, caller, ereq)
	rec.GrantTime = time.Since(t)
	idx := rev.ToolIndex(name)
	rec.Grant = hooks.GrantRecord{Outcome: d.Outcome, Rules: d.Rules, Row: idx}
	allowed, err := d.Allowed(name)
	if err != nil {
		rec.Grant.Err, rec.Grant.Rules = err, failureRules(err)
		fail(rec, toolcall.StageNotVerified, hooks.Answerer{Kind: toolcall.ByGate, Rules: rec.Grant.Rules}, err)
		rec.Outcome, rec.Result = toolcall.OutcomeRefusedGate, TextResult(AnswerNotVerified, true)
		return call, rec
	}
	rec.Grant.Granted = allowed
	// Step 4: hidden is absent.
	if !allowed {
		rec.Stage, rec.Result = toolcall.StageUnknown, TextResult(AnswerUnknownTool(name), true)
		rec.Answerer = hooks.Answerer{Kind: toolcall.ByGate}
		if idx >= 0 && d.Outcome == engine.Override {
			rec.Answerer.Rules = d.Rules
		}
		return call, rec
	}
	row := &rev.Registry().Tools[idx]
	call.Tool, call.Method = row, row.Method
	p.accepted(ctx, &accepted{req: in.req, bind: in.bind, call: call, rc: rc, idx: idx, ereq: ereq, rec: rec})
	return call, rec
}

// accepted is a granted call on its way through steps 5 to 7. It holds
// no pointer to the step machine's own values: escape analysis reads its
// fields as one, and the call's are on the heap.
type accepted struct {
	req  *mcp.CallToolRequest // callInput's
	bind bool                 // callInput's
	call *hooks.CallContext
	rc   *revisionCache
	idx  int // the row's
	ereq engine.Request
	rec  *hooks.Record
	// cd is the toolgate.call rules' decision (once taken).
	cd *engine.CallDecision
	// answer, when set, answers the call instead of the method: a before
	// hook's, or the rules' result; answerer gave it.
	answer   *mcp.CallToolResult
	answerer hooks.Answerer
	// inv runs the method on the bound arguments; nil before binding,
	// and when they are not known (a dry run without them).
	inv methods.Invocation
}

// accepted runs steps 5 to 7 for a granted call: each step reports
// whether it decided the call, and the first that does ends it.
func (p *pipeline) accepted(ctx context.Context, s *accepted) {
	if p.beforeHooks(ctx, s) || p.callRules(ctx, s) || p.limit(ctx, s) || p.approval(ctx, s) ||
		p.answer(ctx, s) || p.confirmation(ctx, s) || p.bind(ctx, s) || p.method(ctx, s) {
		return
	}
	p.resultRules(ctx, s)
}

// beforeHooks is step 5's first: the before hooks, in registration order.
// A refusal is kept for callRules (every reason is gathered); the first
// answer waits for the steps that may still refuse or hold the call.
func (p *pipeline) beforeHooks(ctx context.Context, s *accepted) bool {
	res, by, decided := p.fx.before(ctx, s.call, s.rec)
	s.answer, s.answerer = res, by
	return decided
}

// callRules evaluates the toolgate.call rules and refuses the call with
// every deny reason, the hooks' then the rules'. Refusing wins.
func (p *pipeline) callRules(ctx context.Context, s *accepted) bool {
	rec := s.rec
	byHooks := len(rec.Denials)
	t := time.Now()
	if err := p.loadHistory(ctx, s.call, &s.ereq, rec, false); err != nil {
		rec.RulesTime = time.Since(t)
		fail(rec, toolcall.StageRuleFailed, hooks.Answerer{Kind: toolcall.ByRule}, fmt.Errorf("history: %w", err))
		return true
	}
	cd := engineRevision(s.call.Revision).Call(ctx, s.call.Caller, s.ereq)
	rec.RulesTime = time.Since(t)
	rec.CallDecision, s.cd = &cd.CallDecision, cd
	if cd.Err != nil {
		fail(rec, toolcall.StageRuleFailed, hooks.Answerer{Kind: toolcall.ByRule, Rules: failureRules(cd.Err)}, fmt.Errorf("toolgate.call rules: %w", cd.Err))
		return true
	}
	for _, r := range cd.Deny {
		rec.Denials = append(rec.Denials, hooks.Denial{Reason: r.Message, Rules: r.Rules})
	}
	if len(rec.Denials) == 0 {
		return false
	}
	rec.Stage, rec.Outcome, rec.Answerer = toolcall.StageDenied, toolcall.OutcomeDenied, denier(rec.Denials, byHooks)
	rec.Result = TextResult(strings.Join(rec.Reasons(), "; "), true) // the denials' messages
	return true
}

// denier is who refused a call whose first n denials are its before
// hooks': the first of those hooks that has a name, else the
// toolgate.call rules with every rule that refused, else a hook without
// a name.
func denier(ds []hooks.Denial, n int) hooks.Answerer {
	for _, d := range ds[:n] {
		if d.Hook != "" {
			return hooks.Answerer{Kind: toolcall.ByHook, Name: d.Hook}
		}
	}
	if n == len(ds) {
		return hooks.Answerer{Kind: toolcall.ByHook}
	}
	by := hooks.Answerer{Kind: toolcall.ByRule}
	for _, d := range ds[n:] {
		by.Rules = appendNew(by.Rules, d.Rules...)
	}
	return by
}

// approval (docs/contract.md §13) holds a call an approval rule names
// before anything answers it, unless it consumes an approval.
func (p *pipeline) approval(ctx context.Context, s *accepted) bool {
	if s.cd.Approval == nil {
		return false
	}
	return p.fx.approval(ctx, s.call, s.cd.Approval, s.rec)
}

// answer answers the call with a before hook's result, else the rules'.
func (p *pipeline) answer(_ context.Context, s *accepted) bool {
	rec := s.rec
	if s.answer == nil && s.cd.Result != nil {
		res, err := policyResult(s.cd.Result)
		if err != nil {
			fail(rec, toolcall.StageRuleFailed, hooks.Answerer{Kind: toolcall.ByRule, Rules: s.cd.ResultRules}, err)
			return true
		}
		s.answer, s.answerer = res, hooks.Answerer{Kind: toolcall.ByRule, Rules: s.cd.ResultRules}
	}
	if s.answer == nil {
		return false
	}
	rec.Stage, rec.Outcome, rec.Result, rec.Answerer = toolcall.StageAnswered, toolcall.OutcomeAnswered, s.answer, s.answerer
	return true
}

// confirmation asks the user to confirm a call that will run.
func (p *pipeline) confirmation(ctx context.Context, s *accepted) bool {
	if s.cd.Confirm == "" {
		return false
	}
	s.rec.Confirm = s.cd.Confirm
	return p.fx.confirm(ctx, s.req, s.call, s.cd.Confirm, s.rec)
}

// bind is step 6: the arguments bound to the row's method.
func (p *pipeline) bind(ctx context.Context, s *accepted) bool {
	rec, row := s.rec, s.call.Tool
	if p.methods == nil || !s.bind {
		rec.Stage = toolcall.StageRun // a dry run that does not know them
		return false
	}
	binding := hooks.Answerer{Kind: toolcall.ByBinding}
	m, ok := p.methods.Method(row.Method)
	if !ok {
		fail(rec, toolcall.StageArguments, binding, fmt.Errorf("tool %s: no method %q is registered", row.Name, row.Method))
		return true
	}
	schemas, err := s.rc.argSchemas(s.idx)
	if err != nil {
		fail(rec, toolcall.StageArguments, binding, err)
		return true
	}
	var args []toolcall.Arg
	if row.Listed() {
		args, err = bindListed(row, schemas[0], s.call.Arguments)
	} else {
		args, err = bind(row, schemas, m, s.call.Arguments)
	}
	var inv methods.Invocation
	if err == nil {
		inv, err = p.fx.bind(ctx, m, args)
		// The method names the argument; the answer is the row's.
		if ae := asArgumentError(err); ae != nil && !row.Listed() {
			if decl := declared(row, ae.Name); decl != nil {
				err = argumentError(decl, ae.Problem, ae.Err)
			}
		}
	}
	if err != nil {
		if ae := asArgumentError(err); ae != nil {
			fail(rec, toolcall.StageArguments, binding, ae)
			rec.Argument, rec.Result = ae, TextResult(ae.Message(), true)
			return true
		}
		fail(rec, toolcall.StageArguments, binding, fmt.Errorf("bind arguments: %w", err))
		return true
	}
	rec.Stage, rec.Bound, rec.Answerer = toolcall.StageRun, true, hooks.Answerer{Kind: toolcall.ByMethod, Name: row.Method}
	s.inv = inv
	return false
}

// method is step 7: the method runs on the bound arguments, and its
// result is the call's (a dry run: the result it was given, if any).
func (p *pipeline) method(ctx context.Context, s *accepted) bool {
	return p.fx.run(ctx, s.req, s.call, s.inv, s.rec)
}

// resultRules run the result rules (docs/contract.md §18) on the call's
// result, when there is one and the policies have them.
func (p *pipeline) resultRules(ctx context.Context, s *accepted) {
	if s.rec.Result != nil && engineRevision(s.call.Revision).HasResultRules() {
		p.results(ctx, s.call, &s.ereq, s.rec)
	}
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

// fail ends the call with the generic internal error (docs/contract.md §5).
func fail(r *hooks.Record, stage toolcall.Stage, by hooks.Answerer, err error) {
	r.Stage, r.Outcome, r.Answerer = stage, toolcall.OutcomeFailed, by
	r.Result, r.Err = TextResult(AnswerInternal, true), err
}

// held ends the call held for an approval under rule, request id.
func held(r *hooks.Record, rule *engine.Approval, id string) {
	text := ApprovalRequired(rule.Reason, id)
	r.Stage, r.Outcome, r.Answerer = toolcall.StageHeld, toolcall.OutcomeHeld, hooks.Answerer{Kind: toolcall.ByApproval, Rules: rule.Rules}
	r.Result, r.ApprovalID = TextResult(text, true), id
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

// engineRevision is the engine revision behind r: every CallContext and
// record the adapter makes names one of the engine's.
func engineRevision(r toolcall.Revision) *engine.Revision {
	rev, _ := r.(*engine.Revision)
	return rev
}
