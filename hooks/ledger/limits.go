package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// Limiter decides calls under the limits of data.toolgate.call.limit in a
// LimitStore: it is the adapter's hooks.Limits.
type Limiter struct {
	store store.LimitStore
	now   func() time.Time
}

// NewLimiter returns a Limiter over store; now is the clock (time.Now when
// nil). It panics when store is nil.
func NewLimiter(store store.LimitStore, now func() time.Time) *Limiter {
	if store == nil {
		panic("ledger: a limit store is required")
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{store: store, now: now}
}

var _ hooks.Limits = (*Limiter)(nil)

// ErrLimitStore is wrapped by a Limiter's failures: the store could not
// answer, and the call fails closed.
var ErrLimitStore = errors.New("ledger: the limit store could not answer")

// Admit implements hooks.Limits.
func (l *Limiter) Admit(ctx context.Context, limits []toolcall.Limit) (hooks.LimitCheck, error) {
	return l.check(ctx, limits, l.store.AdmitCall)
}

// Peek implements hooks.Limits.
func (l *Limiter) Peek(ctx context.Context, limits []toolcall.Limit) (hooks.LimitCheck, error) {
	return l.check(ctx, limits, l.store.PeekLimits)
}

func (l *Limiter) check(ctx context.Context, limits []toolcall.Limit,
	f func(context.Context, []store.LimitRequest, time.Time) (bool, []store.LimitCount, error)) (hooks.LimitCheck, error) {
	reqs := make([]store.LimitRequest, len(limits))
	for i, lim := range limits {
		if lim.Key == "" || !(lim.Max > 0) || lim.Per <= 0 || lim.Cost < 0 {
			return hooks.LimitCheck{}, fmt.Errorf("%w: malformed limit %+v", ErrLimitStore, lim)
		}
		reqs[i] = store.LimitRequest{Key: lim.Key, Max: lim.Max, Per: lim.Per, Cost: lim.Cost}
	}
	ok, counts, err := f(ctx, reqs, l.now())
	if err == nil && len(counts) != len(limits) {
		err = fmt.Errorf("store answered %d counts for %d limits", len(counts), len(limits))
	}
	if err != nil {
		return hooks.LimitCheck{}, fmt.Errorf("%w: %w", ErrLimitStore, err)
	}
	ck := hooks.LimitCheck{Admitted: ok, States: make([]hooks.LimitState, len(limits))}
	for i, c := range counts {
		ck.States[i] = hooks.LimitState{Limit: limits[i], Count: c.Count, Used: c.Used, Wait: c.Wait, Never: c.Never}
	}
	return ck, nil
}
