package ledger

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHookSkipsUnkeyedCalls: a call without an idempotency key, or without
// a caller, skips the ledger (the adapter runs neither half, so no store
// is touched); a keyed call does not.
func TestHookSkipsUnkeyedCalls(t *testing.T) {
	t.Parallel()
	h := New(NewMemoryStore(), Options{}).Hook()
	assert.NotNil(t, h.Skip)
	assert.True(t, h.Skip(newCall("max", `{}`, `{}`)), "no _meta key")
	assert.True(t, h.Skip(newCall("max", `{"festi/idempotencyKey":""}`, `{}`)), "an empty key")
	anon := newCall("max", keyMeta("k-1"), `{}`)
	anon.Caller = nil
	assert.True(t, h.Skip(anon), "no caller")
	assert.False(t, h.Skip(newCall("max", keyMeta("k-1"), `{}`)), "a keyed call")
}
