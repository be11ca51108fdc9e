package engine

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/toolcall"
)

// Outcome says how a grant decision was reached.
type Outcome = toolcall.GrantOutcome

const (
	// NoOverride: data.toolgate.grant.granted is undefined; the base
	// decision stands.
	NoOverride = toolcall.GrantNoOverride
	// Override: granted is defined (even empty); exactly its names are granted.
	Override = toolcall.GrantOverride
	// Failed: evaluating the policy failed; see GrantDecision.Err.
	Failed = toolcall.GrantFailed
	// Nobody: no caller is signed in; nothing is granted and no policy was asked.
	Nobody = toolcall.GrantNobody
)

// GrantDecision is the answer to "which tools may this caller use". List and
// call read the same value: the listing leniently (a failed policy falls back
// to the base decision), the call strictly (a failed policy refuses).
//
// A GrantDecision is immutable and may be shared between goroutines.
type GrantDecision struct {
	Outcome  Outcome
	Revision *Revision
	// Err is the evaluation failure when Outcome is Failed: a *PolicyError.
	Err error
	// Rules, filled by Explain only, are the rules that defined granted.
	Rules []Location

	view    *callerView
	prompts promptGrant // data.toolgate.grant.prompts (prompt.go)
	granted ast.Set     // the override set (strings only), when Outcome is Override
	allowed []bool      // per row, from granted; set by precompute for shared decisions
	visible atomic.Pointer[[]int]
	// canon, set by precompute, is the revision's shared copy of granted
	// with its flags and visible rows.
	canon *canonValue
}

// Base reports the base decision for the named row; false for a name no row has.
func (d *GrantDecision) Base(name string) bool {
	i := d.Revision.ToolIndex(name)
	return i >= 0 && d.view != nil && d.view.base[i]
}

// Allowed is the strict reading used by tools/call: whether the named tool
// is granted. It returns the failure when the policy failed. A name no row
// has is never allowed, also when an override set names it.
func (d *GrantDecision) Allowed(name string) (bool, error) {
	switch d.Outcome {
	case Failed:
		return false, d.Err
	case Nobody:
		return false, nil
	}
	i := d.Revision.ToolIndex(name)
	if i < 0 {
		return false, nil
	}
	return d.allowedRow(i), nil
}

func (d *GrantDecision) allowedRow(i int) bool {
	switch d.Outcome {
	case Override:
		if d.allowed != nil {
			return d.allowed[i]
		}
		return d.granted.Contains(d.Revision.rowTerms[i].name)
	case NoOverride, Failed:
		return d.view.base[i]
	}
	return false
}

// precompute resolves an override set into one flag per row, so that a
// decision read many times (a memoised one) answers Allowed with a slice
// index instead of a hash lookup in a set as large as the registry. It must
// be called before the decision is shared.
//
// Decisions with equal override sets share one copy of the set and of what
// is derived from it (see canonTable).
func (d *GrantDecision) precompute() {
	if d.Outcome != Override {
		return
	}
	r := d.Revision
	c := r.canon.get(ast.NewTerm(d.granted), func(c *canonValue) {
		set := c.term.Value.(ast.Set)
		c.allowed = make([]bool, len(r.rowTerms))
		for i := range c.allowed {
			c.allowed[i] = set.Contains(r.rowTerms[i].name)
		}
	})
	d.canon, d.granted, d.allowed = c, c.term.Value.(ast.Set), c.allowed
}

// Visible is the lenient reading used by tools/list: like Allowed, but a
// failed policy falls back to the base decision.
func (d *GrantDecision) Visible(name string) bool {
	if d.Outcome == Nobody {
		return false
	}
	i := d.Revision.ToolIndex(name)
	return i >= 0 && d.allowedRow(i)
}

// VisibleRows returns the indexes of the rows the lenient reading grants, in
// registry order. It is computed once per decision; the slice is shared and
// must not be modified.
func (d *GrantDecision) VisibleRows() []int {
	if d.Outcome == Nobody {
		return nil
	}
	visible := &d.visible
	if d.canon != nil {
		visible = &d.canon.visible // an override's rows depend on its set alone
	}
	if p := visible.Load(); p != nil {
		return *p
	}
	out := make([]int, 0, len(d.Revision.reg.Tools))
	for i := range d.Revision.reg.Tools {
		if d.allowedRow(i) {
			out = append(out, i)
		}
	}
	out = slices.Clip(out)
	visible.CompareAndSwap(nil, &out)
	return *visible.Load()
}

// Granted returns the names the strict reading grants, in registry order;
// nil when the decision failed or nobody is signed in.
func (d *GrantDecision) Granted() []string {
	if d.Outcome == Failed || d.Outcome == Nobody {
		return nil
	}
	var out []string
	for _, i := range d.VisibleRows() {
		out = append(out, d.Revision.reg.Tools[i].Name)
	}
	return out
}

// OverrideSet returns the names of the override set, sorted, including names
// no row has; nil without an override.
func (d *GrantDecision) OverrideSet() []string {
	if d.Outcome != Override {
		return nil
	}
	out := make([]string, 0, d.granted.Len())
	d.granted.Foreach(func(t *ast.Term) {
		out = append(out, string(t.Value.(ast.String)))
	})
	sort.Strings(out)
	return out
}

// Reason is one deny reason with every rule that produced it.
type Reason = toolcall.Reason

// CallDecision is the answer of the toolgate.call rules for an accepted
// call: the revision that decided and what it decided (every deny reason
// with its rules, the result, approval, confirmation and limits).
type CallDecision struct {
	Revision *Revision
	toolcall.CallDecision
}

// DefaultApprovalTTL is the ttl of an approval rule that names none.
const DefaultApprovalTTL = time.Hour

// Approval is the value of data.toolgate.call.approval for one call: who
// must approve it, why, and how long a request or an approval lasts.
type Approval = toolcall.Approval

// Failure kinds of a PolicyError.
const (
	KindEval     = "eval_error"    // a runtime error: conflict, type error, ...
	KindBuiltin  = "builtin_error" // a built-in function failed (strict)
	KindTimeout  = "timeout"       // the evaluation passed its deadline
	KindCanceled = "canceled"      // the caller's context was canceled
	KindType     = "type_error"    // a rule produced a value of the wrong type
	KindInput    = "input_error"   // the input document could not be built (an *InputError); no policy was asked
)

// ErrPolicy is wrapped by every PolicyError, for errors.Is.
var ErrPolicy = errors.New("policy evaluation failed")

// PolicyError is a failing policy: not an answer, a failure (docs/contract.md §4).
type PolicyError struct {
	// Rule is the ref that was being read, e.g. data.toolgate.grant.granted.
	Rule string
	// Kind is one of the Kind constants.
	Kind string
	// Code is OPA's error code when OPA reported one (eval_conflict_error, ...).
	Code string
	// Location is where in the policy the failure arose, when known.
	Location Location
	// Message describes the failure in full, for logs only.
	Message string
	// Err is the underlying error, if any.
	Err error
}

func (e *PolicyError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Rule, e.Kind)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Location.File != "" {
		s += " at " + e.Location.String()
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *PolicyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrPolicy, e.Err}
	}
	return []error{ErrPolicy}
}
