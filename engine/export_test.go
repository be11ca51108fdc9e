package engine

import "github.com/toolgate/toolgate/toolcall"

// Evaluations counts the policy evaluations the revision ran, for tests
// that check what the decision cache saves.
func (r *Revision) Evaluations() uint64 { return r.evals.Load() }

// CachedDecisions is the number of grant decisions the revision memoises.
func (r *Revision) CachedDecisions() int {
	if r.decisions == nil {
		return 0
	}
	return r.decisions.Len()
}

// Fingerprint is a caller's decision cache key.
func Fingerprint(c *toolcall.Caller) string { return string(c.AppendFingerprint(nil)) }

// NewDecisionCacheForTest exposes the LRU with a small bound.
func NewDecisionCacheForTest(max int) (get func(key string) *GrantDecision, put func(key string, d *GrantDecision)) {
	dc := newDecisionCache(max)
	return func(k string) *GrantDecision { return dc.Get([]byte(k)) },
		func(k string, d *GrantDecision) { dc.Put([]byte(k), d) }
}

// SetFlightHook makes the leader of every round of cold evaluations call
// hook(true) before it evaluates, and every call that joins a round call
// hook(false) once it waits. Set it before the revision is used.
func (r *Revision) SetFlightHook(hook func(lead bool)) { r.flights.hook = hook }

// ReloadCounts returns how many reloads (Reload and Watch, not ReloadFrom)
// have been attempted and ended, and how many of them built a revision.
func (e *Engine) ReloadCounts() (attempts, builds uint64) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	return e.attempts, e.builds
}
