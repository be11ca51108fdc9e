package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
)

// Rate limits and quotas (docs/contract.md §18) are counted in the ledger's store,
// so that replicas sharing a store share them. A store keeps one entry per
// admitted call and key (a sliding log): a call is admitted under a limit
// when fewer than Max entries with its key are younger than Per.

// LimitRequest is one limit a call must pass.
type LimitRequest struct {
	Key string
	Max int64
	Per time.Duration
}

// LimitCount is what a store found for one LimitRequest.
type LimitCount struct {
	// Count is how many calls were admitted under the key within the last
	// Per, before this call.
	Count int64
	// Wait is, when the limit refuses (Count >= Max), how long until a
	// call would be admitted under it; 0 when it admits.
	Wait time.Duration
}

// LimitStore counts calls under rate limits (MemoryStore, SQLiteStore and
// PostgresStore implement it). Implementations are safe for concurrent
// use, also from several processes where the store is shared.
type LimitStore interface {
	// AdmitCall decides, atomically, a call that must pass every limit at
	// now: when each has fewer than Max calls within its last Per, the call
	// is counted once under each distinct key and admitted is true;
	// otherwise nothing is counted. Of concurrent calls under one limit
	// exactly as many are admitted as it has room for. counts are in the
	// order of limits.
	AdmitCall(ctx context.Context, limits []LimitRequest, now time.Time) (admitted bool, counts []LimitCount, err error)
	// PeekLimits answers like AdmitCall without counting anything.
	PeekLimits(ctx context.Context, limits []LimitRequest, now time.Time) (admitted bool, counts []LimitCount, err error)
	// PruneLimits removes at most limit counted calls whose every window
	// ended before now and returns how many it removed.
	PruneLimits(ctx context.Context, now time.Time, limit int) (int, error)
}

var (
	_ LimitStore = (*MemoryStore)(nil)
	_ LimitStore = (*SQLiteStore)(nil)
	_ LimitStore = (*PostgresStore)(nil)
)

// waitFor is how long until a call is admitted under a limit of max per
// per, given the times (ascending) of the calls counted within the
// window: once the oldest len(ats)-max+1 of them left it.
func waitFor(ats []int64, max int64, per time.Duration, now time.Time) time.Duration {
	n := int64(len(ats))
	if n < max {
		return 0
	}
	return time.Unix(0, ats[n-max]).Add(per).Sub(now)
}

// maxCountLife bounds how long a counted call is kept, whatever a window
// says: a time past it would not fit the stores' nanosecond times.
const maxCountLife = 100 * 365 * 24 * time.Hour

// keyLifetimes are the distinct keys of limits, sorted, and for each the
// longest Per: how long a call counted under the key must be kept.
func keyLifetimes(limits []LimitRequest) (keys []string, per map[string]time.Duration) {
	per = make(map[string]time.Duration, len(limits))
	for _, l := range limits {
		p, ok := per[l.Key]
		if !ok {
			keys = append(keys, l.Key)
		}
		per[l.Key] = min(max(p, l.Per), maxCountLife)
	}
	slices.Sort(keys) // one locking order for every call
	return keys, per
}

// Limiter decides calls under the limits of data.toolgate.call.limit in a
// LimitStore: it is the adapter's mcpadapter.Limits.
type Limiter struct {
	store LimitStore
	now   func() time.Time
}

// NewLimiter returns a Limiter over store; now is the clock (time.Now when
// nil). It panics when store is nil.
func NewLimiter(store LimitStore, now func() time.Time) *Limiter {
	if store == nil {
		panic("ledger: a limit store is required")
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{store: store, now: now}
}

var _ mcpadapter.Limits = (*Limiter)(nil)

// ErrLimitStore is wrapped by a Limiter's failures: the store could not
// answer, and the call fails closed.
var ErrLimitStore = errors.New("ledger: the limit store could not answer")

// Admit implements mcpadapter.Limits.
func (l *Limiter) Admit(ctx context.Context, limits []engine.Limit) (mcpadapter.LimitCheck, error) {
	return l.check(ctx, limits, l.store.AdmitCall)
}

// Peek implements mcpadapter.Limits.
func (l *Limiter) Peek(ctx context.Context, limits []engine.Limit) (mcpadapter.LimitCheck, error) {
	return l.check(ctx, limits, l.store.PeekLimits)
}

func (l *Limiter) check(ctx context.Context, limits []engine.Limit,
	f func(context.Context, []LimitRequest, time.Time) (bool, []LimitCount, error)) (mcpadapter.LimitCheck, error) {
	reqs := make([]LimitRequest, len(limits))
	for i, lim := range limits {
		if lim.Key == "" || lim.Max < 1 || lim.Per <= 0 {
			return mcpadapter.LimitCheck{}, fmt.Errorf("%w: malformed limit %+v", ErrLimitStore, lim)
		}
		reqs[i] = LimitRequest{Key: lim.Key, Max: lim.Max, Per: lim.Per}
	}
	ok, counts, err := f(ctx, reqs, l.now())
	if err == nil && len(counts) != len(limits) {
		err = fmt.Errorf("store answered %d counts for %d limits", len(counts), len(limits))
	}
	if err != nil {
		return mcpadapter.LimitCheck{}, fmt.Errorf("%w: %w", ErrLimitStore, err)
	}
	ck := mcpadapter.LimitCheck{Admitted: ok, States: make([]mcpadapter.LimitState, len(limits))}
	for i, c := range counts {
		ck.States[i] = mcpadapter.LimitState{Limit: limits[i], Count: c.Count, Wait: c.Wait}
	}
	return ck, nil
}
