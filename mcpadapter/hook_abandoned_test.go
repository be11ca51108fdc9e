package mcpadapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// A before hook that outlives its deadline is abandoned: the call fails
// closed, and what the hook returns or panics afterwards reaches nobody.
// The hook here returns when its deadline passes, the very moment the call
// gives up on it, with nothing ordering the two: under -race this pins that
// the abandoned goroutine writes nothing that the call reads.
func TestAbandonedHookReturnsToNobody(t *testing.T) {
	for _, late := range []string{"returns", "panics"} {
		t.Run(late, func(t *testing.T) {
			finished := make(chan struct{})
			h := hooks.Hook{Name: "late", Before: func(ctx context.Context, _ *hooks.CallContext) (hooks.Verdict, error) {
				<-ctx.Done()
				defer close(finished)
				if late == "panics" {
					panic("a late hook panicked")
				}
				return hooks.Deny("A late hook denies."), ctx.Err()
			}}
			// The hook returns only after its deadline, however slow the
			// machine: the short timeout makes the test quick, not flaky.
			g := newGoverned(t, setup{
				caller:      &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}},
				extraHooks:  []hooks.Hook{h},
				hookTimeout: 20 * time.Millisecond,
			})
			c := g.connectRaw(t, proto20250618)
			resp := c.call(`{"name":"echo","arguments":{"text":"x"}}`)
			<-finished
			require.Equal(t, "Error: An internal error occurred while executing the tool.", resultText(t, toolResult(t, resp)))
			rec := g.after.lastEnd(t)
			require.Equal(t, toolcall.StageHookFailed, rec.Stage)
			require.Equal(t, toolcall.OutcomeFailed, rec.Outcome)
			if late == "returns" {
				// Whether the call saw the deadline or the hook's own error
				// first, it failed on the deadline.
				require.ErrorIs(t, rec.Err, context.DeadlineExceeded)
			}
		})
	}
}
