package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"time"
)

// Rate limits and quotas (docs/contract.md §18) are counted in the ledger's store,
// so that replicas sharing a store share them. A store keeps one entry per
// admitted call and key (a sliding log) with the call's cost: a call is
// admitted under a limit when the costs of the entries with its key that
// are younger than Per, plus its own cost, do not exceed Max (§20's
// budgets; a limit without a cost weighs every call 1, so that is "fewer
// than Max calls").

// LimitRequest is one limit a call must pass.
type LimitRequest struct {
	Key string
	// Max is the most the costs within Per may add up to; above 0.
	Max float64
	Per time.Duration
	// Cost is what this call weighs under Key; 0 means 1. Limits sharing
	// a key share one cost (the entry counted under the key).
	Cost float64
}

// cost is the call's cost under l: 1 when none was given.
func (l LimitRequest) cost() float64 {
	if l.Cost == 0 {
		return 1
	}
	return l.Cost
}

// LimitCount is what a store found for one LimitRequest.
type LimitCount struct {
	// Count is how many calls were admitted under the key within the last
	// Per, before this call.
	Count int64
	// Used is the sum of their costs (Count when every cost was 1).
	Used float64
	// Wait is, when the limit refuses, how long until a call would be
	// admitted under it; 0 when it admits, or when it never admits.
	Wait time.Duration
	// Never reports that the call's cost exceeds Max: no window admits it.
	Never bool
}

// fits reports whether a call of cost on top of used stays within max.
// Costs are float64: sums of decimal fractions (0.1 + 0.2) are taken as
// written, within a relative 1e-12 of max; integers below 2^53 are exact.
func fits(used, cost, max float64) bool {
	return used+cost <= max || used+cost-max <= max*1e-12
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

// countOf reads one limit's window: ats and costs (ascending by time) are
// the calls counted under its key within Per.
func countOf(l LimitRequest, ats []int64, costs []float64, now time.Time) LimitCount {
	c := LimitCount{Count: int64(len(ats))}
	for _, x := range costs {
		c.Used += x
	}
	cost := l.cost()
	switch {
	case fits(c.Used, cost, l.Max):
	case cost > l.Max && !fits(0, cost, l.Max):
		c.Never = true
	default:
		// Admitted once the oldest calls whose costs add up to what is
		// too much have left the window.
		need, gone := c.Used+cost-l.Max, 0.0
		for i, x := range costs {
			gone += x
			if gone >= need || fits(c.Used-gone, cost, l.Max) {
				c.Wait = time.Unix(0, ats[i]).Add(l.Per).Sub(now)
				break
			}
		}
	}
	return c
}

// refuses reports whether the limit refuses a call of its cost, given what
// the store counted.
func (c LimitCount) refuses(l LimitRequest) bool {
	return c.Never || !fits(c.Used, l.cost(), l.Max)
}

// maxCountLife bounds how long a counted call is kept, whatever a window
// says: a time past it would not fit the stores' nanosecond times.
const maxCountLife = 100 * 365 * 24 * time.Hour

// keyLifetimes are the distinct keys of limits, sorted, and for each the
// longest Per (how long a call counted under the key must be kept) and
// the largest cost (what the call weighs under it).
func keyLifetimes(limits []LimitRequest) (keys []string, per map[string]time.Duration, cost map[string]float64) {
	per = make(map[string]time.Duration, len(limits))
	cost = make(map[string]float64, len(limits))
	for _, l := range limits {
		p, ok := per[l.Key]
		if !ok {
			keys = append(keys, l.Key)
		}
		per[l.Key] = min(max(p, l.Per), maxCountLife)
		cost[l.Key] = max(cost[l.Key], l.cost())
	}
	slices.Sort(keys) // one locking order for every call
	return keys, per, cost
}

// maxStoredKey is the longest limit key a store keeps as it is; a longer
// one (a policy may build keys from argument values of any size) is kept
// as its SHA-256 (storedKey), in every store alike: the memory store then
// holds at most this much per key whatever the policy built, and an SQL
// index takes it (PostgreSQL's B-tree refuses entries of more than about
// 2.7 kB).
const maxStoredKey = 256

// storedKey is key as every store keeps it: itself up to maxStoredKey
// bytes, "sha256:" and the hex of its SHA-256 beyond.
func storedKey(key string) string {
	if len(key) <= maxStoredKey {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// storedKeys returns limits with each key as a store keeps it (storedKey).
func storedKeys(limits []LimitRequest) []LimitRequest {
	out := make([]LimitRequest, len(limits))
	for i, l := range limits {
		l.Key = storedKey(l.Key)
		out[i] = l
	}
	return out
}

// ErrTooManyLimitKeys is returned by a store's AdmitCall when counting the
// call would need a key beyond the store's cap on distinct keys (for a
// MemoryStore, MemoryMaxLimitKeys): the call is not counted and fails
// closed, like any other store failure.
var ErrTooManyLimitKeys = errors.New("store: too many distinct limit keys")
