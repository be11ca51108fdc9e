package approvals_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/store"
)

// TestShownEscapesWhatApproversSee: a reason built from the
// arguments carrying a bidi override reaches approvers (the console and
// HTTP API) escaped as the webhook and the command line show it, with a
// mark naming the fields escaping changed; the raw fields stay as they
// were.
func TestShownEscapesWhatApproversSee(t *testing.T) {
	t.Parallel()
	e := newEnvPolicy(t, store.NewMemoryStore(), `package toolgate.call

approval := {"reason": sprintf("send 100 EUR to account %s", [input.request.arguments.target]), "approvers": ["admin"], "ttl": "10m"} if {
	input.tool.name == "wipe"
}
`)
	as := e.connect(t, alice, nil)
	text, isErr := call(t, as, "wipe", "1234\u202e5678")
	require.True(t, isErr)
	require.Contains(t, text, "Approval required: ")
	code, body := e.do(t, bob, "GET", "/approvals", "")
	require.Equal(t, http.StatusOK, code, body)
	var list struct {
		Approvals []approvals.Request `json:"approvals"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Approvals, 1)
	r := list.Approvals[0]
	assert.Equal(t, "send 100 EUR to account 1234\u202e5678", r.Reason)
	assert.Equal(t, `send 100 EUR to account 1234\u202e5678`, r.Shown.Reason)
	assert.Equal(t, approvals.Visible(r.Reason), r.Shown.Reason)
	assert.Equal(t, []string{"reason", "arguments"}, r.Shown.Escaped)
	assert.Equal(t, "wipe", r.Shown.Tool)
	assert.Equal(t, "alice", r.Shown.Subject)
	assert.NotContains(t, r.Shown.Reason+r.Shown.Tool+r.Shown.Subject+r.ArgumentsText, "\u202e")
}
