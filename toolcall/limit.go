package toolcall

import "time"

// Limit is one object of data.toolgate.call.limit (docs/contract.md §18,
// §20): a call is admitted only if the costs of the calls admitted with
// Key within the last Per, plus its own Cost, stay within Max (without a
// cost: fewer than Max calls); admitting it counts it under Key.
type Limit struct {
	// Key names the counter; the policy chooses it (per subject, per tool,
	// per tenant claim, per argument value...). Never empty.
	Key string `json:"key"`
	// Max is how many calls Per admits (an integer ≥ 1), or, with a Cost,
	// the most their costs may add up to (any number above 0).
	Max float64 `json:"max"`
	// Cost is what the call weighs under Key (§20's budgets); 0 when the
	// policy gave none: the call weighs 1.
	Cost float64 `json:"cost,omitempty"`
	// Per is the sliding window; positive.
	Per time.Duration `json:"per"`
	// Reason is shown to a caller the limit refuses. Never empty.
	Reason string `json:"reason"`
	// Rules are the rules that defined the limit.
	Rules []Location `json:"rules,omitempty"`
}

// Weight is what the call weighs under the limit: Cost, or 1 without one.
func (l Limit) Weight() float64 {
	if l.Cost == 0 {
		return 1
	}
	return l.Cost
}

// Fits reports whether the call fits on top of used, the costs counted
// under Key within Per: used + Weight ≤ Max, within a relative 1e-12 of
// Max so that decimal fractions add up as written (the stores compare
// alike).
func (l Limit) Fits(used float64) bool {
	w := l.Weight()
	return used+w <= l.Max || used+w-l.Max <= l.Max*1e-12
}

// NeverFits reports whether the call's cost is above Max: no window
// admits it (docs/contract.md §20).
func (l Limit) NeverFits() bool { return !l.Fits(0) }
