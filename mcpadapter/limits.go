package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// Limits counts calls under the rate limits and quotas of
// data.toolgate.call.limit (docs/contract.md §18); hooks/ledger.Limiter is one,
// over the ledger's store, so that replicas sharing the store share the
// limits. The adapter asks it only for a granted call that nothing refused.
type Limits interface {
	// Admit decides, atomically, a call that must pass every limit: it is
	// admitted and counted under each, or refused and counted under none.
	// An error fails the call closed.
	Admit(ctx context.Context, limits []engine.Limit) (LimitCheck, error)
	// Peek answers like Admit without counting: what `toolgate explain`
	// shows.
	Peek(ctx context.Context, limits []engine.Limit) (LimitCheck, error)
}

// LimitCheck is the answer of Limits.Admit and Limits.Peek.
type LimitCheck struct {
	// Admitted reports whether every limit admitted the call.
	Admitted bool
	// States are the limits' counters, in the order asked.
	States []LimitState
}

// LimitState is one limit's counter as the store found it.
type LimitState struct {
	Limit engine.Limit
	// Count is how many calls the limit's key admitted within the last
	// Per, before this call.
	Count int64
	// Wait is how long until a call would be admitted under this limit;
	// 0 when it admits.
	Wait time.Duration
}

// Refuses reports whether this limit refuses the call.
func (s LimitState) Refuses() bool { return s.Count >= s.Limit.Max }

// ErrNoLimits fails a call that a limit rule names on a server without a
// limit store.
var ErrNoLimits = errors.New("a limit rule names the call but the server has no limit store")

// RateLimited is the answer to a call a limit refuses: the limit's reason,
// and the whole seconds until a call would be admitted (rounded up, at
// least 1).
func RateLimited(reason string, wait time.Duration) string {
	return fmt.Sprintf("Rate limit exceeded: %s. Try again in %d s.", reason, waitSeconds(wait))
}

func waitSeconds(wait time.Duration) int64 {
	s := int64((wait + time.Second - 1) / time.Second)
	return max(s, 1)
}

// refusing is the limit that refuses the call longest (the first such in
// key order), or nil when every limit admits it.
func (ck *LimitCheck) refusing() *LimitState {
	var worst *LimitState
	for i := range ck.States {
		s := &ck.States[i]
		if s.Refuses() && (worst == nil || s.Wait > worst.Wait) {
			worst = s
		}
	}
	return worst
}

// limit runs the limits step of step 5 (docs/contract.md §18): a served
// call is admitted (and counted) or refused; a dry run peeks at the
// counters when it has a store, and only records the limits otherwise. It
// reports whether that decided the call (limited, failed).
func (p *pipeline) limit(ctx context.Context, limits []engine.Limit, rec *Record) bool {
	var rules []engine.Location
	for _, l := range limits {
		rules = appendNew(rules, l.Rules...)
	}
	by := Answerer{Kind: toolcall.ByLimit, Rules: rules}
	store := p.limits
	if p.a != nil {
		store = p.a.opts.Limits
	}
	if store == nil {
		if p.a == nil {
			return false // a dry run without the store: the limits are in rec.CallDecision
		}
		rec.fail(toolcall.StageHookFailed, by, ErrNoLimits)
		return true
	}
	// The closure reads dry, not p: capturing p would move every call's
	// pipeline to the heap, limits or not.
	dry := p.a == nil
	ck, err := pipelineGuard(ctx, p, func(ctx context.Context) (LimitCheck, error) {
		if dry {
			return store.Peek(ctx, limits)
		}
		return store.Admit(ctx, limits)
	})
	if err == nil && len(ck.States) != len(limits) {
		err = fmt.Errorf("the limit store answered %d states for %d limits", len(ck.States), len(limits))
	}
	if err == nil && !ck.Admitted && ck.refusing() == nil {
		err = errors.New("the limit store refused the call under no limit")
	}
	if err != nil {
		rec.fail(toolcall.StageHookFailed, by, fmt.Errorf("limits: %w", err))
		return true
	}
	rec.Limits = ck.States
	if ck.Admitted {
		return false
	}
	s := ck.refusing()
	text := RateLimited(s.Limit.Reason, s.Wait)
	rec.Stage, rec.Outcome = toolcall.StageLimited, toolcall.OutcomeLimited
	rec.Answerer, rec.Result = Answerer{Kind: toolcall.ByLimit, Rules: s.Limit.Rules}, TextResult(text, true)
	return true
}
