package inspect

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// TestExplainApproval: explain shows the approval rule and the
// confirmation (docs/contract.md §13).
func TestExplainApproval(t *testing.T) {
	t.Parallel()
	src := source(baseRegistry, map[string]string{
		"call.rego": `package toolgate.call

approval := {"reason": "needs an admin", "approvers": ["admin"], "ttl": "30m"} if input.tool.name == "fetch"

confirm := "Echo this?" if input.tool.name == "echo"
`,
	})
	e, err := engine.New(context.Background(), src, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}

	x := Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: admin, Tool: "fetch"})
	require.NotNil(t, x.Call)
	assert.Equal(t, StageHeld, x.Call.Stage)
	assert.Equal(t, "Approval required: needs an admin (approval <id>). Call again once it is approved.", x.Call.Answer)
	require.NotNil(t, x.Call.Approval)
	assert.Equal(t, []string{"admin"}, x.Call.Approval.Approvers)
	assert.Equal(t, []engine.Location{{File: "rego/call.rego", Row: 3, Col: 1}}, x.Call.Rules)
	var out bytes.Buffer
	require.NoError(t, x.WriteText(&out))
	assert.Contains(t, out.String(), "approval  approvers admin, ttl 30m0s")

	x = Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: admin, Tool: "echo"})
	assert.Equal(t, StageRun, x.Call.Stage)
	assert.Equal(t, "Echo this?", x.Call.Confirm)
}
