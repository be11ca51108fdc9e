package store

import (
	"context"
	"slices"
	"time"
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
