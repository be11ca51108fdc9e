package hooks

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
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
	Meta toolcall.Meta
	// Caller is who the call is made for; never nil for a call that reaches
	// the hooks.
	Caller *toolcall.Caller
	// Source is the identity source the caller came from
	// (mcpadapter.Options.Source): "token", "jwt", or
	// hooks.SourceLocal. A subject of one source is never another's:
	// hooks that keep state per caller (approvals, idempotency keys) key it
	// by Source and Caller.Subject.
	Source string
	// Revision is the one revision every decision of this call read.
	Revision toolcall.Revision
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

// BeforeFunc is a before hook: it runs once a call is accepted (docs/contract.md §5 step
// 5), in registration order. An error or a panic fails the call closed.
type BeforeFunc func(ctx context.Context, call *CallContext) (Verdict, error)

// AfterFunc is an after hook: a notification that runs exactly once for every
// call that reached step 5 and every call refused at step 3, with the call's
// Record. It cannot change the answer and must not modify the Record; an
// error or a panic is logged and ignored.
type AfterFunc func(ctx context.Context, call *CallContext, rec *Record) error

// Hook is a named pair of before and after halves; either may be nil.
type Hook struct {
	Name   string
	Before BeforeFunc
	After  AfterFunc
	// Prompt says both halves return promptly on their own (no I/O, no
	// waiting on others): the adapter runs them on the call's goroutine,
	// still turning a panic into a failure, without the goroutine and timer
	// that bound other hooks by mcpadapter.Options.HookTimeout.
	Prompt bool
	// PromptFor, when set, says the same of one call: a hook that waits
	// only for some calls (the ledger, for a call with an idempotency key)
	// runs the others as a Prompt hook. It must be cheap, never block, and
	// give the same answer for a call each time it is asked.
	PromptFor func(call *CallContext) bool
}
