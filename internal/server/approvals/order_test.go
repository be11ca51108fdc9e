package approvals_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/store"
)

// TestStep5Order: refusing wins, then approval, then answers (docs/contract.md §13);
// a malformed approval fails the call closed.
func TestStep5Order(t *testing.T) {
	t.Parallel()
	const policy = `package toolgate.call

deny contains "no wiping that" if input.request.arguments.target == "denied"

approval := {"reason": "wiping needs an admin", "approvers": ["admin"]} if input.tool.name == "wipe"

approval := {"reason": "", "approvers": ["admin"]} if input.tool.name == "free"

result := {"content": [{"type": "text", "text": "answered by policy"}]} if input.request.arguments.target == "answer"
`
	st := store.NewMemoryStore()
	e := newEnvPolicy(t, st, policy)
	as := e.connect(t, alice, nil)

	text, isErr := call(t, as, "wipe", "denied")
	assert.True(t, isErr)
	assert.Equal(t, "no wiping that", text, "refusing wins over approval")
	pending, err := st.PendingApprovals(context.Background(), e.clock.Now(), store.PendingQuery{Roles: []string{"admin"}, Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, pending, "a refused call records no request")

	text, _ = call(t, as, "wipe", "answer")
	id := heldID(t, text) // approval before answers
	code, _ := e.do(t, bob, "POST", "/approvals/"+id+"/approve", "")
	require.Equal(t, http.StatusOK, code)
	text, isErr = call(t, as, "wipe", "answer")
	assert.False(t, isErr)
	assert.Equal(t, "answered by policy", text)
	assert.Zero(t, e.ran("answer"))

	text, isErr = call(t, as, "free", "x")
	assert.True(t, isErr)
	assert.Equal(t, "Error: An internal error occurred while executing the tool.", text)
	assert.Zero(t, e.ran("x"))
}
