package mcpadapter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// TestConfirmStateBindsTheCall: a confirmation's requestState counts only
// for the call it was asked of: same source, subject, tool, arguments
// and question, before it expires, from this adapter.
func TestConfirmStateBindsTheCall(t *testing.T) {
	t.Parallel()
	a := &Adapter{}
	a.confirmKey[0] = 1
	mk := func(args, subject, source string) *hooks.CallContext {
		return &hooks.CallContext{Name: "pay", Arguments: json.RawMessage(args), Caller: &toolcall.Caller{Subject: subject}, Source: source}
	}
	call := mk(`{"amount":1}`, "alice", "token")
	state := a.confirmState(call, "Pay?", time.Now().Add(time.Minute))
	assert.True(t, a.confirmAsked(state, call, "Pay?"))
	assert.False(t, a.confirmAsked(state, mk(`{"amount":1000}`, "alice", "token"), "Pay?"), "other arguments")
	assert.False(t, a.confirmAsked(state, mk(`{"amount":1}`, "alice", "jwt"), "Pay?"), "another source's alice")
	assert.False(t, a.confirmAsked(state, mk(`{"amount":1}`, "bob", "token"), "Pay?"), "another caller")
	assert.False(t, a.confirmAsked(state, call, "Pay more?"), "another question")
	assert.False(t, a.confirmAsked(a.confirmState(call, "Pay?", time.Now().Add(-time.Second)), call, "Pay?"), "expired")
	b := &Adapter{}
	assert.False(t, b.confirmAsked(state, call, "Pay?"), "another adapter's key")
	assert.False(t, a.confirmAsked("", call, "Pay?"))
	assert.False(t, a.confirmAsked("!!", call, "Pay?"))
}
