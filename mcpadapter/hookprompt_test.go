package mcpadapter_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// TestPromptHookRunsWithoutTheDeadline: a hook marked Prompt runs without
// the hook deadline's context (it is not run under the guard's goroutine
// and timer), a hook not so marked gets the deadline; a Prompt hook's
// panic still fails the call closed.
func TestPromptHookRunsWithoutTheDeadline(t *testing.T) {
	t.Parallel()
	var promptDeadline, guardedDeadline, afterDeadline atomic.Bool
	var ran atomic.Int32
	hs := []hooks.Hook{
		{Name: "prompt", Prompt: true,
			Before: func(ctx context.Context, _ *hooks.CallContext) (hooks.Verdict, error) {
				_, ok := ctx.Deadline()
				promptDeadline.Store(ok)
				ran.Add(1)
				return hooks.Allow(), nil
			},
			After: func(ctx context.Context, _ *hooks.CallContext, _ *hooks.Record) error {
				_, ok := ctx.Deadline()
				afterDeadline.Store(ok)
				ran.Add(1)
				return nil
			}},
		{Name: "guarded", Before: func(ctx context.Context, _ *hooks.CallContext) (hooks.Verdict, error) {
			_, ok := ctx.Deadline()
			guardedDeadline.Store(ok)
			return hooks.Allow(), nil
		}},
	}
	s := setup{caller: &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, hookTimeout: time.Minute, extraHooks: hs}
	g := newGoverned(t, s)
	c := g.connectRaw(t, proto20250618)
	c.call(`{"name":"echo","arguments":{"text":"x"}}`)
	end := g.after.lastEnd(t)
	require.Equal(t, toolcall.OutcomeResult, end.Outcome)
	assert.EqualValues(t, 2, ran.Load(), "both halves ran")
	assert.False(t, promptDeadline.Load(), "the prompt before half ran without the guard")
	assert.False(t, afterDeadline.Load(), "the prompt after half ran without the guard")
	assert.True(t, guardedDeadline.Load(), "the other hook ran with its deadline")

	panics := hooks.Hook{Name: "panics", Prompt: true, Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
		panic("boom")
	}}
	g = newGoverned(t, setup{caller: s.caller, extraHooks: []hooks.Hook{panics}})
	c = g.connectRaw(t, proto20250618)
	c.call(`{"name":"echo","arguments":{"text":"x"}}`)
	assert.Equal(t, toolcall.OutcomeFailed, g.after.lastEnd(t).Outcome, "a prompt hook's panic fails the call")
}

// TestPromptForIsPerCall: a hook whose PromptFor says so for a call runs
// both halves without the deadline for it, and with the deadline for a
// call it does not.
func TestPromptForIsPerCall(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var deadlines []bool
	seen := func(ctx context.Context) {
		_, ok := ctx.Deadline()
		mu.Lock()
		deadlines = append(deadlines, ok)
		mu.Unlock()
	}
	h := hooks.Hook{Name: "keyed",
		PromptFor: func(call *hooks.CallContext) bool {
			_, ok := call.Meta.String("k")
			return !ok
		},
		Before: func(ctx context.Context, _ *hooks.CallContext) (hooks.Verdict, error) {
			seen(ctx)
			return hooks.Allow(), nil
		},
		After: func(ctx context.Context, _ *hooks.CallContext, _ *hooks.Record) error {
			seen(ctx)
			return nil
		}}
	g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, hookTimeout: time.Minute, extraHooks: []hooks.Hook{h}})
	c := g.connectRaw(t, proto20250618)
	c.call(`{"name":"echo","arguments":{"text":"x"}}`)
	c.call(`{"name":"echo","arguments":{"text":"x"},"_meta":{"k":"v"}}`)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []bool{false, false, true, true}, deadlines, "prompt for the first call, guarded for the second")
}
