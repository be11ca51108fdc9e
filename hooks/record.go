package hooks

import (
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/toolcall"
)

// Answerer says who gave a call its answer.
type Answerer struct {
	// Kind is one of toolcall's By constants.
	Kind string
	// Name is the hook's name (ByHook) or the method's (ByMethod).
	Name string
	// Rules are the rules that decided (ByRule, ByApproval, and ByGate for
	// a grant decision that failed where OPA said, or an override located
	// in a dry run).
	Rules []toolcall.Location
}

// GrantRecord is how the grant decision of a call came out.
type GrantRecord struct {
	// Outcome is no override, override, failed or nobody.
	Outcome toolcall.GrantOutcome
	// Rules are, for an override, the rules that defined granted (a dry run
	// only: served decisions are not located, for speed), and for a failure
	// where it arose, when OPA said.
	Rules []toolcall.Location
	// Err is the failure when Outcome is toolcall.GrantFailed.
	Err error
	// Granted reports whether the name was granted (the strict reading).
	Granted bool
	// Row is the index of the resolved row; -1 when no row has the name.
	Row int
}

// Denial is one deny reason with who gave it.
type Denial struct {
	Reason string
	// Hook is the before hook that gave it; "" for a toolgate.call rule.
	Hook string
	// Rules are the rules (file:line) that produced it.
	Rules []toolcall.Location
}

// Record is everything the call pipeline (docs/contract.md §5) decided about one
// tools/call: the stage it reached, the grant decision, the call decision
// with every reason and its rule, who answered and the answer, and how long
// each part took. A served call and a dry run (mcpadapter.DryRun, which
// `toolgate explain` prints) produce it by the same code, so the two cannot
// disagree.
//
// After hooks get the Record of every call that reached step 5 or was
// refused at step 3; observers (hooks.Observer) that of every call
// that took a grant decision (steps 3 to 8). Neither may modify it.
type Record struct {
	// Stage is where the call was decided.
	Stage toolcall.Stage
	// Outcome is how the call ended; "" at steps 1, 2 and 4, where no hook
	// hears of the call, and for a dry run at StageRun (the method's
	// outcome is not known).
	Outcome toolcall.Outcome
	// Grant is the grant decision (step 3 and 4).
	Grant GrantRecord
	// CallDecision is the decision of the toolgate.call rules (every deny
	// reason with its rules, the result, approval and confirmation); nil
	// when they were not evaluated.
	CallDecision *toolcall.CallDecision
	// Denials are every deny reason, the hooks' in registration order then
	// the rules' sorted, each with who gave it.
	Denials []Denial
	// Answerer is who gave the answer.
	Answerer Answerer
	// Argument is the argument answer's cause (StageArguments), nil otherwise.
	Argument *toolcall.ArgumentError
	// Confirm is the question the user was (a dry run: would be) asked
	// before the method runs; "" when none.
	Confirm string
	// Dry reports a dry run: no Go hook, approval store, confirmation or
	// method ran.
	Dry bool
	// Bound reports that the arguments were bound to the method.
	Bound bool

	// Result is the result the caller receives, or nil; in a dry run
	// decided at StageRun it is nil (the method's result would follow).
	Result *mcp.CallToolResult
	// Err is the failure, with full server-side detail, or nil: the call
	// failed exactly when it is set (Failed).
	Err error
	// ApprovalID is the approval request the call was held for, was told
	// was refused, or consumed (docs/contract.md §13); "" when none was asked.
	ApprovalID string
	// ApprovedBy is the subject of the approver whose approval the call
	// consumed; "" otherwise.
	ApprovedBy string
	// Limits are the counters of the call's rate limits as the limit store
	// found them before the call (docs/contract.md §18); nil when no limit
	// applies or the store was not asked (a dry run without one).
	Limits []LimitState
	// History is what the call's decisions read of the caller's history
	// (docs/contract.md §20): its count and digest; nil when they read
	// none.
	History *HistoryRead
	// ResultDecision is the decision of the result rules on the method's
	// result (docs/contract.md §18); nil when they were not evaluated.
	ResultDecision *toolcall.ResultDecision
	// Redacted reports that the result rules redacted the result: Result
	// is the redacted one.
	Redacted bool

	// Duration is the wall-clock time of the call itself.
	Duration time.Duration
	// GrantTime, RulesTime and MethodTime are the grant decision's, the
	// toolgate.call and result rules' and the method's parts of Duration
	// (Decision is the first two).
	GrantTime, RulesTime, MethodTime time.Duration
}

// Failed reports whether the call failed (Err is its failure).
func (r *Record) Failed() bool { return r.Err != nil }

// Decision is the part of Duration spent in policy decisions: the grant
// decision and, for an accepted call, the toolgate.call rules and the
// result rules.
func (r *Record) Decision() time.Duration { return r.GrantTime + r.RulesTime }

// Reasons are the deny reasons of a call that was refused: when Outcome
// is OutcomeDenied or OutcomeWithheld the messages of Denials (a refused
// approval and an unconfirmed call have none: their one answer), when it
// is OutcomeHeld or OutcomeLimited the one answer; nil otherwise. Each
// call returns a new slice.
func (r *Record) Reasons() []string {
	switch r.Outcome {
	case toolcall.OutcomeDenied, toolcall.OutcomeWithheld:
		if len(r.Denials) > 0 {
			reasons := make([]string, len(r.Denials))
			for i, d := range r.Denials {
				reasons[i] = d.Reason
			}
			return reasons
		}
	case toolcall.OutcomeHeld, toolcall.OutcomeLimited:
	default:
		return nil
	}
	if r.Result == nil {
		return nil
	}
	return []string{r.Answer()}
}

// AnsweredBy names, in a word, who answered or refused the call: the
// hook's name, "policy" for a toolgate.call rule, an approval rule that
// holds the call or a result rule that withholds its result, "approval"
// for a refused approval, "confirmation" and "limit"; "" when the call
// failed, toolgate's gate answered or the method ran. Answerer says the
// same in full.
func (r *Record) AnsweredBy() string {
	if r.Err != nil {
		return ""
	}
	switch r.Answerer.Kind {
	case toolcall.ByHook:
		return r.Answerer.Name
	case toolcall.ByRule, toolcall.ByResultRule:
		return "policy"
	case toolcall.ByApproval:
		if r.Stage == toolcall.StageHeld {
			return "policy"
		}
		return "approval"
	case toolcall.ByConfirmation:
		return "confirmation"
	case toolcall.ByLimit:
		return "limit"
	}
	return ""
}

// DurationMS is Duration in milliseconds, the unit of the audit trail.
func (r *Record) DurationMS() float64 { return float64(r.Duration.Microseconds()) / 1000 }

// Answer is the text of the answer the caller receives: its text content
// items joined by newlines; "" when there is no result.
func (r *Record) Answer() string { return ResultText(r.Result) }

// DecidingRules are the rules (file:line) behind the answer: each deny
// reason's, the approval's or the answering result's, or where the grant
// decision or the toolgate.call rules failed. Empty when the registry's
// base decision, a hook or the method decided.
func (r *Record) DecidingRules() []toolcall.Location {
	var out []toolcall.Location
	add := func(ls []toolcall.Location) {
		for _, l := range ls {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	for _, d := range r.Denials {
		add(d.Rules)
	}
	add(r.Answerer.Rules)
	return out
}

// ResultText is the text content of a CallToolResult, its text items
// joined by newlines; "" for nil.
func ResultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var s string
	n := 0
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if n > 0 {
				s += "\n"
			}
			s += t.Text
			n++
		}
	}
	return s
}

// LimitState is one limit's counter as the store found it.
type LimitState struct {
	Limit toolcall.Limit
	// Count is how many calls the limit's key admitted within the last
	// Per, before this call.
	Count int64
	// Used is the sum of their costs (docs/contract.md §20): Count when
	// every call weighed 1.
	Used float64
	// Wait is how long until a call would be admitted under this limit;
	// 0 when it admits, or when it never does.
	Wait time.Duration
	// Never reports that the call's cost is above the limit's max: no
	// window admits it.
	Never bool
}

// Refuses reports whether this limit refuses the call.
func (s LimitState) Refuses() bool { return s.Never || !s.Limit.Fits(s.Used) }
