package hooks

import (
	"context"

	"github.com/toolgate/toolgate/toolcall"
)

// Limits counts calls under the rate limits and quotas of
// data.toolgate.call.limit (docs/contract.md §18); hooks/ledger.Limiter is one,
// over the ledger's store, so that replicas sharing the store share the
// limits. The adapter asks it only for a granted call that nothing refused.
type Limits interface {
	// Admit decides, atomically, a call that must pass every limit: it is
	// admitted and counted under each, or refused and counted under none.
	// An error fails the call closed.
	Admit(ctx context.Context, limits []toolcall.Limit) (LimitCheck, error)
	// Peek answers like Admit without counting: what `toolgate explain`
	// shows.
	Peek(ctx context.Context, limits []toolcall.Limit) (LimitCheck, error)
}

// LimitCheck is the answer of Limits.Admit and Limits.Peek.
type LimitCheck struct {
	// Admitted reports whether every limit admitted the call.
	Admitted bool
	// States are the limits' counters, in the order asked.
	States []LimitState
}
