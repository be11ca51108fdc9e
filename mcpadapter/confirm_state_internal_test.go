package mcpadapter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/engine"
)

// TestConfirmStateBindsTheCall: a confirmation's requestState counts only
// for the call it was asked of: same source, subject, tool, arguments
// and question, before it expires, from this adapter.
func TestConfirmStateBindsTheCall(t *testing.T) {
	t.Parallel()
	a := &Adapter{}
	a.confirmKey[0] = 1
	call := &CallContext{Name: "pay", Arguments: json.RawMessage(`{"amount":1}`), Caller: &engine.Caller{Subject: "alice"}, Source: "token"}
	state := a.confirmState(call, "Pay?", time.Now().Add(time.Minute))
	assert.True(t, a.confirmAsked(state, call, "Pay?"))
	other := *call
	other.Arguments = json.RawMessage(`{"amount":1000}`)
	assert.False(t, a.confirmAsked(state, &other, "Pay?"), "other arguments")
	other = *call
	other.Source = "jwt"
	assert.False(t, a.confirmAsked(state, &other, "Pay?"), "another source's alice")
	other = *call
	other.Caller = &engine.Caller{Subject: "bob"}
	assert.False(t, a.confirmAsked(state, &other, "Pay?"), "another caller")
	assert.False(t, a.confirmAsked(state, call, "Pay more?"), "another question")
	assert.False(t, a.confirmAsked(a.confirmState(call, "Pay?", time.Now().Add(-time.Second)), call, "Pay?"), "expired")
	b := &Adapter{}
	assert.False(t, b.confirmAsked(state, call, "Pay?"), "another adapter's key")
	assert.False(t, a.confirmAsked("", call, "Pay?"))
	assert.False(t, a.confirmAsked("!!", call, "Pay?"))
}
