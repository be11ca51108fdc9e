package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/toolgate/toolgate/toolcall"
)

// flights deduplicates the cold evaluations of memoised grant decisions:
// while one is in progress for a caller key, the other calls for that key
// wait for it instead of evaluating the whole policy themselves (at 10 000
// rows each evaluation allocates megabytes; 200 of them at once took
// gigabytes and missed their deadlines).
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
	// hook, set by tests only, is called by the leader of a round before it
	// evaluates (lead true) and by a waiter once it has joined (lead false).
	hook func(lead bool)
}

// flight is one round: one evaluation that the calls joining it share.
type flight struct {
	done chan struct{}
	d    *GrantDecision // set before done is closed; nil if the leader panicked
}

// grantOnce is the cold path of a memoised Grant: the first call for key
// evaluates and caches the decision, the calls that arrive meanwhile wait
// for it, each under its own context. A failure is never cached. One that
// is the leader's own (its context ended, or its evaluation passed its
// deadline, or its request's input could not be built) is not shared
// either: the waiters then start a new round.
func (r *Revision) grantOnce(ctx context.Context, c *toolcall.Caller, req *Request, key []byte) *GrantDecision {
	dc, fl := r.decisions, &r.flights
	for {
		fl.mu.Lock()
		if d := dc.Get(key); d != nil { // a round ended since the caller looked
			fl.mu.Unlock()
			return d
		}
		f := fl.m[string(key)]
		if f == nil {
			f = &flight{done: make(chan struct{})}
			if fl.m == nil {
				fl.m = map[string]*flight{}
			}
			fl.m[string(key)] = f
			fl.mu.Unlock()
			return r.lead(ctx, c, req, key, f)
		}
		fl.mu.Unlock()
		if fl.hook != nil {
			fl.hook(false)
		}
		select {
		case <-f.done:
			if d := f.d; d != nil && (d.Outcome != Failed || shared(d.Err)) {
				return d
			}
		case <-ctx.Done():
			return r.ended(ctx, c)
		}
	}
}

// lead evaluates the decision of round f and ends the round.
func (r *Revision) lead(ctx context.Context, c *toolcall.Caller, req *Request, key []byte, f *flight) (d *GrantDecision) {
	fl := &r.flights
	defer func() {
		// Cached (or failed) first, then the round ends: a call that
		// finds no round finds the cached decision.
		fl.mu.Lock()
		delete(fl.m, string(key))
		fl.mu.Unlock()
		f.d = d
		close(f.done)
	}()
	if fl.hook != nil {
		fl.hook(true)
	}
	if ctx.Err() != nil { // ended while it waited for a round or its turn
		return r.ended(ctx, c)
	}
	d = r.grant(ctx, c, req)
	if d.Outcome == Failed {
		return d
	}
	d.precompute()
	return r.decisions.Put(key, d)
}

// shared reports whether a failed decision's error is one every call of
// its round would have got: a deterministic failure of the policy (a
// conflict, a strict built-in, a value of the wrong type), not the
// leader's deadline or cancellation, nor its own request's input.
func shared(err error) bool {
	var pe *PolicyError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Kind {
	case KindTimeout, KindCanceled, KindInput:
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ended is the failed decision of a call whose context ended before its
// evaluation could: the failure an evaluation cut short by it reports
// (KindCanceled or KindTimeout, OPA's eval_cancel_error).
func (r *Revision) ended(ctx context.Context, c *toolcall.Caller) *GrantDecision {
	err := fmt.Errorf("%w: %w", ctx.Err(), &topdown.Error{Code: topdown.CancelErr, Message: "caller cancelled query execution"})
	return &GrantDecision{Revision: r, view: r.view(c), Outcome: Failed, Err: policyError(refGranted, err, ctx)}
}
