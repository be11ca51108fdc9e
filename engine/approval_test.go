package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

// TestApprovalRule reads data.toolgate.call.approval and .confirm (docs/contract.md §13).
func TestApprovalRule(t *testing.T) {
	t.Parallel()
	policy := `package toolgate.call

approval := {"reason": "needs an admin", "approvers": ["ops", "admin", "ops"]} if input.tool.name == "report"

approval := {"reason": "short", "approvers": ["admin"], "ttl": "30m"} if input.tool.name == "echo"

confirm := "Sure?" if input.tool.name == "echo"
`
	rev := newEngine(t, map[string]string{"call.rego": policy}).Current()
	d := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "report"})
	require.NoError(t, d.Err)
	require.Equal(t, &engine.Approval{Reason: "needs an admin", Approvers: []string{"admin", "ops"}, TTL: time.Hour,
		Rules: []engine.Location{{File: "policies/call.rego", Row: 3, Col: 1}}}, d.Approval)
	require.Empty(t, d.Confirm)

	d = rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo"})
	require.NoError(t, d.Err)
	require.Equal(t, 30*time.Minute, d.Approval.TTL)
	require.Equal(t, "Sure?", d.Confirm)
	require.Equal(t, []engine.Location{{File: "policies/call.rego", Row: 7, Col: 1}}, d.ConfirmRules)
}

// TestApprovalRuleFailures: anything but the documented shape is a failure
// of the call rules, never an approval with defaults.
func TestApprovalRuleFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"not an object":         `approval := "admin"`,
		"a set":                 `approval := {"admin"}`,
		"no reason":             `approval := {"approvers": ["admin"]}`,
		"empty reason":          `approval := {"reason": "", "approvers": ["admin"]}`,
		"reason not a string":   `approval := {"reason": 1, "approvers": ["admin"]}`,
		"no approvers":          `approval := {"reason": "r"}`,
		"empty approvers":       `approval := {"reason": "r", "approvers": []}`,
		"approvers a set":       `approval := {"reason": "r", "approvers": {"admin"}}`,
		"approver not a string": `approval := {"reason": "r", "approvers": [1]}`,
		"empty approver":        `approval := {"reason": "r", "approvers": [""]}`,
		"ttl not a duration":    `approval := {"reason": "r", "approvers": ["admin"], "ttl": "soon"}`,
		"ttl a number":          `approval := {"reason": "r", "approvers": ["admin"], "ttl": 60}`,
		"ttl zero":              `approval := {"reason": "r", "approvers": ["admin"], "ttl": "0s"}`,
		"ttl negative":          `approval := {"reason": "r", "approvers": ["admin"], "ttl": "-1h"}`,
		"unknown member":        `approval := {"reason": "r", "approvers": ["admin"], "approver": "bob"}`,
		"confirm empty":         `confirm := ""`,
		"confirm not a string":  `confirm := true`,
		"conflicting approvals": "approval := {\"reason\": \"a\", \"approvers\": [\"x\"]}\n\napproval := {\"reason\": \"b\", \"approvers\": [\"x\"]}",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := callFailure(t, body)
			require.Nil(t, d.Approval)
		})
	}
}
