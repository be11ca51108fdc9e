package ledger_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/hooks/ledger"
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
