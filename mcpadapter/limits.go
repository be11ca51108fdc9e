package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// ErrNoLimits fails a call that a limit rule names on a server without a
// limit store.
var ErrNoLimits = errors.New("a limit rule names the call but the server has no limit store")

// RateLimited is the answer to a call a limit refuses: the limit's reason,
// and the whole seconds until a call would be admitted (rounded up, at
// least 1).
func RateLimited(reason string, wait time.Duration) string {
	return fmt.Sprintf("Rate limit exceeded: %s. Try again in %d s.", reason, waitSeconds(wait))
}

// RateLimitedNever is the answer to a call whose cost is above a limit's
// max (docs/contract.md §20): no wait would admit it.
func RateLimitedNever(reason string) string {
	return fmt.Sprintf("Rate limit exceeded: %s.", reason)
}

func waitSeconds(wait time.Duration) int64 {
	s := int64((wait + time.Second - 1) / time.Second)
	return max(s, 1)
}

// refusing is the limit that refuses the call longest (the first such in
// key order; one that never admits it before any), or nil when every
// limit admits it.
func refusing(ck *hooks.LimitCheck) *hooks.LimitState {
	var worst *hooks.LimitState
	for i := range ck.States {
		s := &ck.States[i]
		if !s.Refuses() || worst != nil && worst.Never {
			continue
		}
		if worst == nil || s.Never || s.Wait > worst.Wait {
			worst = s
		}
	}
	return worst
}

// limit is step 5's rate limits (docs/contract.md §18), after the
// toolgate.call rules: a call they refuse is not held for approval, nor
// answered. A served call is admitted (and counted) or refused; a dry run
// peeks at the counters when it has a store, and only records the limits
// otherwise.
func (p *pipeline) limit(ctx context.Context, s *accepted) bool {
	limits := s.cd.Limits
	if len(limits) == 0 {
		return false
	}
	rec := s.rec
	var rules []engine.Location
	for _, l := range limits {
		rules = appendNew(rules, l.Rules...)
	}
	by := hooks.Answerer{Kind: toolcall.ByLimit, Rules: rules}
	ck, asked, err := p.fx.limits(ctx, limits)
	if !asked {
		return false // a dry run without the store: the limits are in rec.CallDecision
	}
	if err == nil && len(ck.States) != len(limits) {
		err = fmt.Errorf("the limit store answered %d states for %d limits", len(ck.States), len(limits))
	}
	if err == nil && !ck.Admitted && refusing(&ck) == nil {
		err = errors.New("the limit store refused the call under no limit")
	}
	if err != nil {
		if err != ErrNoLimits {
			err = fmt.Errorf("limits: %w", err)
		}
		fail(rec, toolcall.StageHookFailed, by, err)
		return true
	}
	rec.Limits = ck.States
	if ck.Admitted {
		return false
	}
	worst := refusing(&ck)
	text := RateLimited(worst.Limit.Reason, worst.Wait)
	if worst.Never {
		text = RateLimitedNever(worst.Limit.Reason)
	}
	rec.Stage, rec.Outcome = toolcall.StageLimited, toolcall.OutcomeLimited
	rec.Answerer, rec.Result = hooks.Answerer{Kind: toolcall.ByLimit, Rules: worst.Limit.Rules}, TextResult(text, true)
	return true
}
