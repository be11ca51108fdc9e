package mcpadapter

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
)

// CallContext is what hooks see of one tools/call. The adapter builds it
// once per call; hooks must not modify its fields. Values lets a hook pair
// pass state from its before to its after half.
type CallContext struct {
	// DecisionID identifies the call in logs and the audit trail.
	DecisionID string
	// Name is the tool name as sent.
	Name string
	// Tool is the resolved row; nil when the call was refused at step 3,
	// before the name was resolved.
	Tool *registry.Tool
	// Method is the row's method ("" when Tool is nil).
	Method string
	// Arguments is the arguments object as sent, normalised: anything but a
	// JSON object is {}.
	Arguments json.RawMessage
	// Meta is the bounded _meta.
	Meta engine.Meta
	// Caller is who the call is made for; never nil for a call that reaches
	// the hooks.
	Caller *engine.Caller
	// Revision is the one revision every decision of this call read.
	Revision *engine.Revision
	// Start is when the adapter began handling the call.
	Start time.Time

	mu     sync.Mutex // guards values: a hook abandoned past its deadline may still run
	values map[any]any
}

// SetValue stores a value for a later hook of the same call. It is safe for
// concurrent use.
func (c *CallContext) SetValue(key, value any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.values == nil {
		c.values = map[any]any{}
	}
	c.values[key] = value
}

// Value returns what SetValue stored under key, or nil.
func (c *CallContext) Value(key any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.values[key]
}

// Verdict is what a before hook decides. The zero Verdict lets the call go on.
type Verdict struct {
	// Denied refuses the call with Reason, which must not be empty (an empty
	// reason is a failure of the hook, and the call fails closed).
	Denied bool
	Reason string
	// Result, when set and nothing denies, answers the call without running
	// its method.
	Result *mcp.CallToolResult
}

// Allow lets the call go on.
func Allow() Verdict { return Verdict{} }

// Deny refuses the call with a reason.
func Deny(reason string) Verdict { return Verdict{Denied: true, Reason: reason} }

// Answer answers the call with a result instead of running its method.
func Answer(res *mcp.CallToolResult) Verdict { return Verdict{Result: res} }

// Outcome names how a call ended, as the audit trail writes it.
type Outcome string

const (
	// OutcomeResult: the method ran and returned a result (which may carry
	// isError, as an upstream's does).
	OutcomeResult Outcome = "result"
	// OutcomeAnswered: a before hook or a toolgate.call rule answered.
	OutcomeAnswered Outcome = "answered"
	// OutcomeDenied: a before hook or a toolgate.call rule refused.
	OutcomeDenied Outcome = "denied"
	// OutcomeFailed: a before hook, the argument binding or the method failed.
	OutcomeFailed Outcome = "failed"
	// OutcomeRefusedGate: the grant decision failed (step 3).
	OutcomeRefusedGate Outcome = "refused_gate"
	// OutcomeHeld: an approval rule holds the call until a person approves
	// it (SPEC §13).
	OutcomeHeld Outcome = "held"
)

// CallEnd is what an after hook learns about a finished call.
type CallEnd struct {
	Outcome Outcome
	// Result is the result the caller receives, or nil.
	Result *mcp.CallToolResult
	// Err is the failure, with full server-side detail, or nil.
	Err error
	// Failed reports whether the call failed (Err is then not nil).
	Failed bool
	// Reasons are the deny reasons when Outcome is OutcomeDenied.
	Reasons []string
	// Duration is the wall-clock time of the call itself.
	Duration time.Duration
	// Decision is the part of Duration spent in policy decisions: the grant
	// decision and, for an accepted call, the toolgate.call rules.
	Decision time.Duration
	// AnsweredBy names the hook ("policy" for a toolgate.call rule) that
	// answered or denied, when one did.
	AnsweredBy string
	// ApprovalID is the approval request the call was held for, was told
	// was refused, or consumed (SPEC §13); "" when none was asked.
	ApprovalID string
	// ApprovedBy is the subject of the approver whose approval the call
	// consumed; "" otherwise.
	ApprovedBy string
}

// DurationMS is Duration in milliseconds, the unit of the audit trail.
func (e *CallEnd) DurationMS() float64 { return float64(e.Duration.Microseconds()) / 1000 }

// BeforeFunc is a before hook: it runs once a call is accepted (SPEC §5 step
// 5), in registration order. An error or a panic fails the call closed.
type BeforeFunc func(ctx context.Context, call *CallContext) (Verdict, error)

// AfterFunc is an after hook: a notification that runs exactly once for every
// call that reached step 5 and every call refused at step 3. It cannot change
// the answer; an error or a panic is logged and ignored.
type AfterFunc func(ctx context.Context, call *CallContext, end *CallEnd) error

// Hook is a named pair of before and after halves; either may be nil.
type Hook struct {
	Name   string
	Before BeforeFunc
	After  AfterFunc
}
