package mcpadapter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// TestAnswersAreSPECs pins every answer string of answers.go to SPEC's
// text, written out here on purpose: the one copy under test is not the
// reference (a typo in an answer string once went unseen).
func TestAnswersAreSPECs(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Error: Tool name is required.", mcpadapter.AnswerNameRequired)
	require.Equal(t, "Error: Tool access could not be verified.", mcpadapter.AnswerNotVerified)
	require.Equal(t, "Error: An internal error occurred while executing the tool.", mcpadapter.AnswerInternal)
	require.Equal(t, "Error: Unknown tool 'it's'.", mcpadapter.AnswerUnknownTool("it's"))
	arg := func(p toolcall.ArgumentProblem, typ string, internal bool) string {
		return (&toolcall.ArgumentError{Problem: p, Name: "idReward", Type: typ, Internal: internal}).Message()
	}
	require.Equal(t, "Error: Missing required argument 'idReward'.", arg(toolcall.ArgMissing, "int", false))
	require.Equal(t, "Error: Invalid value for argument 'idReward': expected int.", arg(toolcall.ArgInvalid, "int", false))
	require.Equal(t, "Error: Invalid value for argument 'idReward'.", arg(toolcall.ArgInvalid, "Money", true))
	require.Equal(t, "Error: Unknown argument 'idReward'.", arg(toolcall.ArgUnknown, "int", false))
	require.Equal(t, "Approval required: needs a lead (approval 42). Call again once it is approved.", mcpadapter.ApprovalRequired("needs a lead", "42"))
	require.Equal(t, "Approval 42 was refused.", mcpadapter.ApprovalRefused("42"))
	require.Equal(t, "The call was not confirmed.", mcpadapter.MsgNotConfirmed)
	require.Equal(t, "This tool needs a confirmation your client cannot show.", mcpadapter.MsgCannotConfirm)
}

// recordDenials refuse echo with two located reasons; override grants
// only echo and sleep to the role "narrow".
const (
	recordDenials = `package toolgate.call

deny contains "Rule z refuses." if input.request.meta.deny == true

deny contains "Rule a refuses." if input.request.meta.deny == true
`
	recordGrant = `package toolgate.grant

granted := {"echo", "sleep"} if "narrow" in input.caller.roles
`
)

// TestRecordNamesWhoDecided: the Record an after hook gets says which hook
// or rule (file:line) gave each deny reason, whether an override decided
// the grant, who answered, and how long each part took.
func TestRecordNamesWhoDecided(t *testing.T) {
	t.Parallel()
	policies := map[string]string{"denials.rego": recordDenials, "grant.rego": recordGrant}
	t.Run("denied by a hook and by rules", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}, hooks: []string{"deny:Hook says no."}, policies: policies})
		c := g.connectRaw(t, proto20250618)
		c.call(`{"name":"echo","arguments":{"text":"x"},"_meta":{"deny":true}}`)
		rec := g.after.lastEnd(t)
		require.Equal(t, toolcall.StageDenied, rec.Stage)
		require.Equal(t, engine.NoOverride, rec.Grant.Outcome)
		require.True(t, rec.Grant.Granted)
		require.Len(t, rec.Denials, 3)
		require.Equal(t, hooks.Denial{Reason: "Hook says no.", Hook: "deny:Hook says no."}, rec.Denials[0])
		for i, want := range []struct {
			reason string
			row    int
		}{{"Rule a refuses.", 5}, {"Rule z refuses.", 3}} {
			d := rec.Denials[i+1]
			require.Equal(t, want.reason, d.Reason)
			require.Empty(t, d.Hook)
			require.Len(t, d.Rules, 1)
			require.Equal(t, want.row, d.Rules[0].Row, "the rule's line")
			require.Regexp(t, `denials\.rego:\d+$`, d.Rules[0].String())
		}
		require.Equal(t, hooks.Answerer{Kind: toolcall.ByHook, Name: "deny:Hook says no."}, rec.Answerer)
		require.Len(t, rec.DecidingRules(), 2)
		require.Equal(t, "Hook says no.; Rule a refuses.; Rule z refuses.", rec.Answer())
	})
	t.Run("an override grants, the method answers", func(t *testing.T) {
		t.Parallel()
		const ms = 5
		g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "nick", Roles: []string{"narrow"}}, policies: policies})
		c := g.connectRaw(t, proto20250618)
		c.call(fmt.Sprintf(`{"name":"sleep","arguments":{"ms":%d}}`, ms))
		rec := g.after.lastEnd(t)
		require.Equal(t, toolcall.StageRun, rec.Stage)
		require.Equal(t, toolcall.OutcomeResult, rec.Outcome)
		require.Equal(t, engine.Override, rec.Grant.Outcome, "the override decided")
		require.True(t, rec.Bound)
		require.False(t, rec.Dry)
		require.Equal(t, hooks.Answerer{Kind: toolcall.ByMethod, Name: "demo.sleep"}, rec.Answerer)
		require.Empty(t, rec.Denials)
		require.Empty(t, rec.Reasons())
		// The method sleeps: what is measured, not a synchronisation.
		require.GreaterOrEqual(t, rec.MethodTime, ms*time.Millisecond, "the method's time")
		require.GreaterOrEqual(t, rec.Duration, rec.MethodTime+rec.Decision(), "the call's time covers its parts")
		require.Equal(t, rec.GrantTime+rec.RulesTime, rec.Decision())
		require.Positive(t, rec.GrantTime)
		require.Positive(t, rec.RulesTime)
	})
	t.Run("a dry run of the same call", func(t *testing.T) {
		t.Parallel()
		g := newGoverned(t, setup{policies: policies})
		rev := g.eng.Current()
		rec := mcpadapter.DryRun(context.Background(), mcpadapter.DryRunOptions{Revision: rev, Caller: &toolcall.Caller{Subject: "nick", Roles: []string{"narrow"}}, Name: "getReward"})
		require.Equal(t, toolcall.StageUnknown, rec.Stage)
		require.True(t, rec.Dry)
		require.Equal(t, engine.Override, rec.Grant.Outcome)
		require.NotEmpty(t, rec.Grant.Rules, "a dry run locates the override")
		require.Equal(t, "Error: Unknown tool 'getReward'.", rec.Answer())
	})
}

// TestResultText: the text items of a result joined by newlines, other
// items skipped; "" for nil or no text.
func TestResultText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", hooks.ResultText(nil))
	require.Equal(t, "", hooks.ResultText(&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png"}}}))
	require.Equal(t, "a", hooks.ResultText(mcpadapter.TextResult("a", false)))
	require.Equal(t, "a\nb\nc", hooks.ResultText(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "a"}, &mcp.ImageContent{MIMEType: "image/png"}, &mcp.TextContent{Text: "b"}, &mcp.TextContent{Text: "c"},
	}}))
}
