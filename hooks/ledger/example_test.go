package ledger_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// A Limiter decides calls under the limits a policy set
// (data.toolgate.call.limit), counting them in the store.
func ExampleLimiter() {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	l := ledger.NewLimiter(store.NewMemoryStore(), func() time.Time { return now })
	limits := []toolcall.Limit{{Key: "sleep/subject/ann", Max: 1, Per: time.Minute, Reason: "one a minute"}}
	ck, _ := l.Admit(ctx, limits)
	fmt.Println(ck.Admitted)
	now = now.Add(15 * time.Second)
	ck, _ = l.Admit(ctx, limits)
	fmt.Println(ck.Admitted, ck.States[0].Count)
	fmt.Println(mcpadapter.RateLimited(ck.States[0].Limit.Reason, ck.States[0].Wait))
	// Output:
	// true
	// false 1
	// Rate limit exceeded: one a minute. Try again in 45 s.
}
