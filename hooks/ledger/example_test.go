package ledger_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/mcpadapter"
)

// A Store claims a key once; later claims see it running, then completed.
func ExampleStore() {
	ctx := context.Background()
	store := ledger.NewMemoryStore()
	defer store.Close()
	key := ledger.Key{Subject: "alice", Tool: "getReward", ID: "order-17"}
	now := time.Now()

	first, _ := store.Claim(ctx, key, "hash-of-arguments", now, ledger.Lifetimes{})
	again, _ := store.Claim(ctx, key, "hash-of-arguments", now, ledger.Lifetimes{})
	other, _ := store.Claim(ctx, key, "hash-of-other-arguments", now, ledger.Lifetimes{})
	_ = store.Complete(ctx, key, first.Token, []byte(`{"content":[{"type":"text","text":"7"}]}`), now)
	replay, _ := store.Claim(ctx, key, "hash-of-arguments", now, ledger.Lifetimes{})

	fmt.Println(first.State, again.State, other.State, replay.State, string(replay.Result))
	// Output: claimed running conflict completed {"content":[{"type":"text","text":"7"}]}
}

// A Limiter decides calls under the limits a policy set
// (data.toolgate.call.limit), counting them in the store.
func ExampleLimiter() {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	l := ledger.NewLimiter(ledger.NewMemoryStore(), func() time.Time { return now })
	limits := []engine.Limit{{Key: "sleep/subject/ann", Max: 1, Per: time.Minute, Reason: "one a minute"}}
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
