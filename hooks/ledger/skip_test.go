package ledger

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/store"
)

// TestHookIsPromptForUnkeyedCalls: for a call without an idempotency key,
// or without a caller, the ledger's halves are prompt (they touch no
// store: the adapter runs them without a goroutine and timer); for a
// keyed call they are not.
func TestHookIsPromptForUnkeyedCalls(t *testing.T) {
	t.Parallel()
	h := New(store.NewMemoryStore(), Options{}).Hook()
	assert.NotNil(t, h.PromptFor)
	assert.True(t, h.PromptFor(newCall("max", `{}`, `{}`)), "no _meta key")
	assert.True(t, h.PromptFor(newCall("max", `{"festi/idempotencyKey":""}`, `{}`)), "an empty key")
	anon := newCall("max", keyMeta("k-1"), `{}`)
	anon.Caller = nil
	assert.True(t, h.PromptFor(anon), "no caller")
	assert.False(t, h.PromptFor(newCall("max", keyMeta("k-1"), `{}`)), "a keyed call")
}
