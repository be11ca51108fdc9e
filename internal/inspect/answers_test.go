package inspect

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// TestExplainAnswersAreTheServedAnswers: for each stage at which Explain
// predicts the answer, the text it prints is, byte for byte, what the
// served pipeline (mcpadapter) answers the same call, and what docs/contract.md §5
// writes. inspect keeps its own copy of the answer strings; a typo in either
// copy fails here.
func TestExplainAnswersAreTheServedAnswers(t *testing.T) {
	t.Parallel()
	src := source(baseRegistry, map[string]string{
		"grant.rego": `package toolgate.grant

granted := {"echo"} if input.request.meta.fault == "conflict"

granted := {"report"} if input.request.meta.fault == "conflict"
`,
		"call.rego": `package toolgate.call

deny contains "Z says no." if input.request.meta.deny == true

deny contains "A says no." if input.request.meta.deny == true

deny contains 7 if input.request.meta.fail == true

result := {"content": [{"type": "text", "text": "answered by a rule"}]} if input.request.meta.answer == true
`,
	})
	e, err := engine.New(context.Background(), src, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	var (
		admin   = &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
		noRoles = &toolcall.Caller{Subject: "nora", Claims: map[string]any{"scope": "x"}}
	)
	// spec are docs/contract.md §5's literals, written out here on purpose: neither
	// copy under test is the reference.
	cases := []struct {
		name   string
		caller *toolcall.Caller
		tool   string
		meta   string
		stage  string
		spec   string
	}{
		{"nobody", nil, "echo", `{}`, StageNobody, "Error: Unknown tool 'echo'."},
		{"hidden from a caller without roles", noRoles, "report", `{}`, StageUnknown, "Error: Unknown tool 'report'."},
		{"absent", noRoles, "noSuchTool", `{}`, StageUnknown, "Error: Unknown tool 'noSuchTool'."},
		{"a name with a quote", admin, "it's", `{}`, StageUnknown, "Error: Unknown tool 'it's'."},
		{"the grant decision fails", admin, "echo", `{"fault":"conflict"}`, StageNotVerified, "Error: Tool access could not be verified."},
		{"the grant decision fails for a name no row has", admin, "noSuchTool", `{"fault":"conflict"}`, StageNotVerified, "Error: Tool access could not be verified."},
		{"the call rules fail", admin, "echo", `{"fail":true}`, StageRuleFailed, "Error: An internal error occurred while executing the tool."},
		{"denied: reasons sorted and joined", admin, "echo", `{"deny":true}`, StageDenied, "A says no.; Z says no."},
		{"answered by a rule", admin, "echo", `{"answer":true}`, StageAnswered, "answered by a rule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: tc.caller, Tool: tc.tool, Meta: json.RawMessage(tc.meta)})
			require.NotNil(t, x.Call)
			require.Equal(t, tc.stage, x.Call.Stage)
			require.Equal(t, tc.spec, x.Call.Answer, "explain's answer is docs/contract.md §5's")

			a := mcpadapter.New(mcpadapter.Options{Revisions: e, Methods: demoMethods(), Caller: mcpadapter.StaticCaller(tc.caller)})
			var meta mcp.Meta
			require.NoError(t, json.Unmarshal([]byte(tc.meta), &meta))
			res := a.Call(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tc.tool, Arguments: json.RawMessage(`{}`), Meta: meta}})
			require.Len(t, res.Content, 1)
			served := res.Content[0].(*mcp.TextContent).Text
			require.Equal(t, served, x.Call.Answer, "explain's answer is the served one")
		})
	}
}

// TestAnswerConstantsAreSPECs pins inspect's exported answers to docs/contract.md §5's
// text, for callers that print them without a call to explain.
func TestAnswerConstantsAreSPECs(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Error: Tool access could not be verified.", AnswerNotVerified)
	require.Equal(t, "Error: An internal error occurred while executing the tool.", AnswerInternal)
	require.Equal(t, "Error: Unknown tool 'getReward'.", AnswerUnknownTool("getReward"))
}
