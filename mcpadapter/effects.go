package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// effects are what the steps of the call pipeline do through the world
// outside the policies: who calls, the revision, the Go hooks, the limit
// and approval stores, the confirmation and the method. served is a
// served call's; *dryRun is a dry run's, which reads what it is given and
// changes nothing. A step asks its effects and never which run it serves.
//
// Their arguments are the call's heap values, never the step machine's
// own (an argument of an interface call escapes).
type effects interface {
	// caller is who calls (step 2; nil is nobody) and the identity source
	// that vouched for it (CallContext.Source).
	caller(ctx context.Context, req *mcp.CallToolRequest) (*toolcall.Caller, string)
	// revision is the revision every decision of the call reads.
	revision() *revisionCache
	// grant takes the grant decision (step 3); a dry run's is located.
	grant(ctx context.Context, rev *engine.Revision, caller *toolcall.Caller, req engine.Request) *engine.GrantDecision
	// before runs the before hooks in registration order: their denials
	// go to rec.Denials, and the first answer is returned with who gave
	// it. decided: a hook failed (rec says so).
	before(ctx context.Context, call *hooks.CallContext, rec *hooks.Record) (answer *mcp.CallToolResult, by hooks.Answerer, decided bool)
	// limits asks the limit store about the call's limits: Admit (which
	// counts) when served, Peek in a dry run. asked is false when there
	// is no store and the call goes on without one.
	limits(ctx context.Context, limits []engine.Limit) (ck hooks.LimitCheck, asked bool, err error)
	// history is the caller's history (docs/contract.md §20): loaded from
	// the store when served, the one given in a dry run.
	history(ctx context.Context, source, subject string, per time.Duration, max int) (engine.History, error)
	// approval decides a call an approval rule names: it reports whether
	// that decided the call (held, refused, failed); a call that consumed
	// an approval goes on, the approval in rec.
	approval(ctx context.Context, call *hooks.CallContext, rule *engine.Approval, rec *hooks.Record) bool
	// confirm asks the user the question; it reports whether that decided
	// the call (false: confirmed, or not asked).
	confirm(ctx context.Context, req *mcp.CallToolRequest, call *hooks.CallContext, question string, rec *hooks.Record) bool
	// bind binds args for m, a panic an error.
	bind(ctx context.Context, m methods.Method, args []toolcall.Arg) (methods.Invocation, error)
	// run runs inv (nil: the arguments were not bound) and puts its
	// result in rec; it reports whether that decided the call (failed).
	run(ctx context.Context, req *mcp.CallToolRequest, call *hooks.CallContext, inv methods.Invocation, rec *hooks.Record) bool
}

// served are the effects of a call the adapter serves. (One pointer: as
// an effects it is not allocated.)
type served struct{ a *Adapter }

func (s served) caller(ctx context.Context, req *mcp.CallToolRequest) (*toolcall.Caller, string) {
	return s.a.opts.Caller(ctx, req)
}

// revision is the adapter's current revision.
func (s served) revision() *revisionCache { return s.a.revision() }

// grant is the served decision: not located, for speed.
func (s served) grant(ctx context.Context, rev *engine.Revision, caller *toolcall.Caller, req engine.Request) *engine.GrantDecision {
	return rev.Grant(ctx, caller, req)
}

func (s served) before(ctx context.Context, call *hooks.CallContext, rec *hooks.Record) (*mcp.CallToolResult, hooks.Answerer, bool) {
	var (
		answer *mcp.CallToolResult
		by     hooks.Answerer
	)
	for i := range s.a.hooks {
		h := &s.a.hooks[i]
		if h.Before == nil {
			continue
		}
		v, err := s.a.runBefore(ctx, h, call)
		if err == nil && v.Denied && v.Reason == "" {
			err = errors.New("denied with an empty reason")
		}
		if err != nil {
			fail(rec, toolcall.StageHookFailed, hooks.Answerer{Kind: toolcall.ByHook, Name: h.Name}, fmt.Errorf("before hook %q: %w", h.Name, err))
			return nil, hooks.Answerer{}, true
		}
		switch {
		case v.Denied:
			rec.Denials = append(rec.Denials, hooks.Denial{Reason: v.Reason, Hook: h.Name})
		case v.Result != nil && answer == nil:
			answer, by = v.Result, hooks.Answerer{Kind: toolcall.ByHook, Name: h.Name}
		}
	}
	return answer, by, false
}

// limits admits the call in the adapter's store, under the hook
// deadline; without a store the call fails (ErrNoLimits).
func (s served) limits(ctx context.Context, limits []engine.Limit) (hooks.LimitCheck, bool, error) {
	store := s.a.opts.Limits
	if store == nil {
		return hooks.LimitCheck{}, true, ErrNoLimits
	}
	ck, err := guard(ctx, s.a.opts.HookTimeout, false, func(ctx context.Context) (hooks.LimitCheck, error) {
		return store.Admit(ctx, limits)
	})
	return ck, true, err
}

// history loads the caller's history under the hook deadline; without a
// store the call fails (ErrNoHistory).
func (s served) history(ctx context.Context, source, subject string, per time.Duration, max int) (engine.History, error) {
	h := s.a.opts.History
	if h == nil {
		return nil, ErrNoHistory
	}
	return guard(ctx, s.a.opts.HookTimeout, false, func(ctx context.Context) (engine.History, error) {
		return h.Load(ctx, source, subject, per, max)
	})
}

func (s served) approval(ctx context.Context, call *hooks.CallContext, rule *engine.Approval, rec *hooks.Record) bool {
	return s.a.checkApproval(ctx, call, rule, rec)
}

func (s served) confirm(ctx context.Context, req *mcp.CallToolRequest, call *hooks.CallContext, question string, rec *hooks.Record) bool {
	return s.a.confirm(ctx, req, call, question, rec)
}

// bind binds on the call's goroutine a Go method whose binding only
// decodes into its parameter; another binds as a guarded hook runs.
func (s served) bind(ctx context.Context, m methods.Method, args []toolcall.Arg) (methods.Invocation, error) {
	if methods.BindsPromptly(m) {
		return bindSafely(m, args)
	}
	return s.bindGuarded(ctx, m, args)
}

// bindGuarded: a function of its own, so that what guard's closure
// captures is allocated only for a method that does not bind promptly.
func (s served) bindGuarded(ctx context.Context, m methods.Method, args []toolcall.Arg) (methods.Invocation, error) {
	return guard(ctx, s.a.opts.HookTimeout, false, func(context.Context) (methods.Invocation, error) {
		return m.Bind(args)
	})
}

// run runs the method, with the call's Peer in its context when it has
// a session.
func (s served) run(ctx context.Context, req *mcp.CallToolRequest, call *hooks.CallContext, inv methods.Invocation, rec *hooks.Record) bool {
	if inv == nil {
		return false // no methods: nothing runs
	}
	t := time.Now()
	if req.Session != nil {
		ctx = s.a.withPeer(ctx, req, call.Caller, call)
	}
	var res *mcp.CallToolResult
	err := safely(func() error {
		var err error
		res, err = inv(ctx)
		return err
	})
	rec.MethodTime = time.Since(t)
	if err == nil && res == nil {
		err = errors.New("method returned no result")
	}
	if err != nil {
		fail(rec, toolcall.StageRun, rec.Answerer, fmt.Errorf("method %s: %w", call.Method, err))
		// The engine's revision says whether the policy has result rules.
		rev, _ := call.Revision.(interface{ HasResultRules() bool })
		keepRPCError(ctx, rec.Result, err, rev != nil && rev.HasResultRules())
		return true
	}
	rec.Outcome, rec.Result = toolcall.OutcomeResult, res
	return false
}

// dryRun are the effects of a dry run (DryRunOptions): the given caller
// and revision, a located grant decision, a limit store only peeked at,
// and no hook, approval store, confirmation or method.
type dryRun struct {
	who *toolcall.Caller
	rc  *revisionCache
	// store is peeked at (Limits.Peek); nil: the limits are not read.
	store hooks.Limits
	// taken is a result the method is taken to return; nil: none.
	taken *mcp.CallToolResult
	// hist is the caller's history as given (nil: none yet).
	hist engine.History
	// granted is the grant decision the dry run read; nil before step 3.
	granted *engine.GrantDecision
}

// history is the one given, newest first, at most max.
func (d *dryRun) history(_ context.Context, _, _ string, _ time.Duration, max int) (engine.History, error) {
	h := d.hist
	if len(h) > max {
		h = h[:max]
	}
	return h, nil
}

func (d *dryRun) caller(context.Context, *mcp.CallToolRequest) (*toolcall.Caller, string) {
	return d.who, hooks.SourceLocal
}

func (d *dryRun) revision() *revisionCache { return d.rc }

// grant is located: its Rules say which rules defined an override.
func (d *dryRun) grant(ctx context.Context, rev *engine.Revision, caller *toolcall.Caller, req engine.Request) *engine.GrantDecision {
	d.granted = rev.Explain(ctx, caller, req)
	return d.granted
}

func (d *dryRun) before(context.Context, *hooks.CallContext, *hooks.Record) (*mcp.CallToolResult, hooks.Answerer, bool) {
	return nil, hooks.Answerer{}, false
}

func (d *dryRun) limits(ctx context.Context, limits []engine.Limit) (hooks.LimitCheck, bool, error) {
	if d.store == nil {
		return hooks.LimitCheck{}, false, nil
	}
	var ck hooks.LimitCheck
	err := safely(func() error {
		var err error
		ck, err = d.store.Peek(ctx, limits)
		return err
	})
	return ck, true, err
}

// approval holds the call: the request's id would be the store's.
func (d *dryRun) approval(_ context.Context, _ *hooks.CallContext, rule *engine.Approval, rec *hooks.Record) bool {
	held(rec, rule, "<id>")
	return true
}

// confirm asks nobody: the question is in rec.Confirm.
func (d *dryRun) confirm(context.Context, *mcp.CallToolRequest, *hooks.CallContext, string, *hooks.Record) bool {
	return false
}

func (d *dryRun) bind(_ context.Context, m methods.Method, args []toolcall.Arg) (methods.Invocation, error) {
	return bindSafely(m, args)
}

// run runs nothing: the call's result is the one taken, if any.
func (d *dryRun) run(_ context.Context, _ *mcp.CallToolRequest, _ *hooks.CallContext, _ methods.Invocation, rec *hooks.Record) bool {
	rec.Result = d.taken
	return false
}

// bindSafely binds args for m on this goroutine, a panic an error.
func bindSafely(m methods.Method, args []toolcall.Arg) (methods.Invocation, error) {
	var inv methods.Invocation
	err := safely(func() error {
		var err error
		inv, err = m.Bind(args)
		return err
	})
	return inv, err
}
