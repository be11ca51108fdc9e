package hooks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}, IsError: true}
}

// TestRecordDerivesWhatItRepeated: Failed, Reasons, AnsweredBy and
// Decision are read from the fields that say the same, for every way a
// call ends: the deny reasons are the denials' (or, for a refusal that
// has none, the one answer), who answered is the Answerer in a word, and
// a failure answers for nobody.
func TestRecordDerivesWhatItRepeated(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cases := []struct {
		name       string
		rec        hooks.Record
		reasons    []string
		answeredBy string
	}{
		{"the method ran", hooks.Record{Stage: toolcall.StageRun, Outcome: toolcall.OutcomeResult, Result: text("ok"),
			Answerer: hooks.Answerer{Kind: toolcall.ByMethod, Name: "demo.echo"}}, nil, ""},
		{"hooks and rules refused", hooks.Record{Stage: toolcall.StageDenied, Outcome: toolcall.OutcomeDenied, Result: text("a; b"),
			Answerer: hooks.Answerer{Kind: toolcall.ByHook, Name: "guard"},
			Denials:  []hooks.Denial{{Reason: "a", Hook: "guard"}, {Reason: "b"}}}, []string{"a", "b"}, "guard"},
		{"rules refused", hooks.Record{Stage: toolcall.StageDenied, Outcome: toolcall.OutcomeDenied, Result: text("b"),
			Answerer: hooks.Answerer{Kind: toolcall.ByRule}, Denials: []hooks.Denial{{Reason: "b"}}}, []string{"b"}, "policy"},
		{"an approval refused", hooks.Record{Stage: toolcall.StageDenied, Outcome: toolcall.OutcomeDenied, Result: text("Approval 7 was refused."),
			Answerer: hooks.Answerer{Kind: toolcall.ByApproval}}, []string{"Approval 7 was refused."}, "approval"},
		{"held", hooks.Record{Stage: toolcall.StageHeld, Outcome: toolcall.OutcomeHeld, Result: text("Approval required."),
			Answerer: hooks.Answerer{Kind: toolcall.ByApproval}}, []string{"Approval required."}, "policy"},
		{"not confirmed", hooks.Record{Stage: toolcall.StageDenied, Outcome: toolcall.OutcomeDenied, Result: text("The call was not confirmed."),
			Answerer: hooks.Answerer{Kind: toolcall.ByConfirmation}}, []string{"The call was not confirmed."}, "confirmation"},
		{"confirmation asked", hooks.Record{Stage: toolcall.StageAnswered, Outcome: toolcall.OutcomeAnswered, Result: &mcp.CallToolResult{},
			Answerer: hooks.Answerer{Kind: toolcall.ByConfirmation}}, nil, "confirmation"},
		{"limited", hooks.Record{Stage: toolcall.StageLimited, Outcome: toolcall.OutcomeLimited, Result: text("Rate limit exceeded."),
			Answerer: hooks.Answerer{Kind: toolcall.ByLimit}}, []string{"Rate limit exceeded."}, "limit"},
		{"withheld", hooks.Record{Stage: toolcall.StageWithheld, Outcome: toolcall.OutcomeWithheld, Result: text("withheld"),
			Answerer: hooks.Answerer{Kind: toolcall.ByResultRule}, Denials: []hooks.Denial{{Reason: "secret"}}}, []string{"secret"}, "policy"},
		{"a hook answered", hooks.Record{Stage: toolcall.StageAnswered, Outcome: toolcall.OutcomeAnswered, Result: text("cached"),
			Answerer: hooks.Answerer{Kind: toolcall.ByHook, Name: "ledger"}}, nil, "ledger"},
		{"a hook failed after another refused", hooks.Record{Stage: toolcall.StageRuleFailed, Outcome: toolcall.OutcomeFailed, Result: text("internal"),
			Answerer: hooks.Answerer{Kind: toolcall.ByRule}, Denials: []hooks.Denial{{Reason: "a", Hook: "guard"}}, Err: boom}, nil, ""},
		{"the gate", hooks.Record{Stage: toolcall.StageUnknown, Result: text("Unknown tool"), Answerer: hooks.Answerer{Kind: toolcall.ByGate}}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := tc.rec
			require.Equal(t, tc.reasons, rec.Reasons())
			require.Equal(t, tc.answeredBy, rec.AnsweredBy())
			require.Equal(t, rec.Err != nil, rec.Failed())
		})
	}
	rec := hooks.Record{GrantTime: 2 * time.Millisecond, RulesTime: 3 * time.Millisecond, MethodTime: time.Second}
	require.Equal(t, 5*time.Millisecond, rec.Decision(), "the grant decision and the rules, not the method")
}
