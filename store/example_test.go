package store_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/store"
)

// A Store claims a key once; later claims see it running, then completed.
func ExampleStore() {
	ctx := context.Background()
	st := store.NewMemoryStore()
	defer st.Close()
	key := store.Key{Subject: "alice", Tool: "getReward", ID: "order-17"}
	now := time.Now()

	first, _ := st.Claim(ctx, key, "hash-of-arguments", now, store.Lifetimes{})
	again, _ := st.Claim(ctx, key, "hash-of-arguments", now, store.Lifetimes{})
	other, _ := st.Claim(ctx, key, "hash-of-other-arguments", now, store.Lifetimes{})
	_ = st.Complete(ctx, key, first.Token, []byte(`{"content":[{"type":"text","text":"7"}]}`), now)
	replay, _ := st.Claim(ctx, key, "hash-of-arguments", now, store.Lifetimes{})

	fmt.Println(first.State, again.State, other.State, replay.State, string(replay.Result))
	// Output: claimed running conflict completed {"content":[{"type":"text","text":"7"}]}
}
