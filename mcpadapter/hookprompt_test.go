package mcpadapter_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
)

// TestPromptHookRunsWithoutTheDeadline: a hook marked Prompt runs without
// the hook deadline's context (it is not run under the guard's goroutine
// and timer), a hook not so marked gets the deadline; a Prompt hook's
// panic still fails the call closed.
func TestPromptHookRunsWithoutTheDeadline(t *testing.T) {
	t.Parallel()
	var promptDeadline, guardedDeadline, afterDeadline atomic.Bool
	var ran atomic.Int32
	hooks := []mcpadapter.Hook{
		{Name: "prompt", Prompt: true,
			Before: func(ctx context.Context, _ *mcpadapter.CallContext) (mcpadapter.Verdict, error) {
				_, ok := ctx.Deadline()
				promptDeadline.Store(ok)
				ran.Add(1)
				return mcpadapter.Allow(), nil
			},
			After: func(ctx context.Context, _ *mcpadapter.CallContext, _ *mcpadapter.Record) error {
				_, ok := ctx.Deadline()
				afterDeadline.Store(ok)
				ran.Add(1)
				return nil
			}},
		{Name: "guarded", Before: func(ctx context.Context, _ *mcpadapter.CallContext) (mcpadapter.Verdict, error) {
			_, ok := ctx.Deadline()
			guardedDeadline.Store(ok)
			return mcpadapter.Allow(), nil
		}},
	}
	s := setup{caller: &engine.Caller{Subject: "max", Roles: []string{"manager"}}, hookTimeout: time.Minute, extraHooks: hooks}
	g := newGoverned(t, s)
	c := g.connectRaw(t, proto20250618)
	c.call(`{"name":"echo","arguments":{"text":"x"}}`)
	end := g.after.lastEnd(t)
	require.Equal(t, mcpadapter.OutcomeResult, end.Outcome)
	assert.EqualValues(t, 2, ran.Load(), "both halves ran")
	assert.False(t, promptDeadline.Load(), "the prompt before half ran without the guard")
	assert.False(t, afterDeadline.Load(), "the prompt after half ran without the guard")
	assert.True(t, guardedDeadline.Load(), "the other hook ran with its deadline")

	panics := mcpadapter.Hook{Name: "panics", Prompt: true, Before: func(context.Context, *mcpadapter.CallContext) (mcpadapter.Verdict, error) {
		panic("boom")
	}}
	g = newGoverned(t, setup{caller: s.caller, extraHooks: []mcpadapter.Hook{panics}})
	c = g.connectRaw(t, proto20250618)
	c.call(`{"name":"echo","arguments":{"text":"x"}}`)
	assert.Equal(t, mcpadapter.OutcomeFailed, g.after.lastEnd(t).Outcome, "a prompt hook's panic fails the call")
}

// TestSkippedHookRunsNeitherHalf: a hook whose Skip says so for a call runs
// neither half for it, and runs both for a call it does not skip.
func TestSkippedHookRunsNeitherHalf(t *testing.T) {
	t.Parallel()
	var before, after atomic.Int32
	h := mcpadapter.Hook{Name: "keyed",
		Skip: func(call *mcpadapter.CallContext) bool {
			_, ok := call.Meta.String("k")
			return !ok
		},
		Before: func(context.Context, *mcpadapter.CallContext) (mcpadapter.Verdict, error) {
			before.Add(1)
			return mcpadapter.Allow(), nil
		},
		After: func(context.Context, *mcpadapter.CallContext, *mcpadapter.Record) error {
			after.Add(1)
			return nil
		}}
	g := newGoverned(t, setup{caller: &engine.Caller{Subject: "max", Roles: []string{"manager"}}, extraHooks: []mcpadapter.Hook{h}})
	c := g.connectRaw(t, proto20250618)
	c.call(`{"name":"echo","arguments":{"text":"x"}}`)
	assert.Zero(t, before.Load())
	assert.Zero(t, after.Load())
	c.call(`{"name":"echo","arguments":{"text":"x"},"_meta":{"k":"v"}}`)
	assert.EqualValues(t, 1, before.Load())
	assert.EqualValues(t, 1, after.Load())
}
