package inspect

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// argsRegistry has rows of the demo methods with every kind of argument
// answer, and one whose declared argument the method lacks.
const argsRegistry = `
tools:
  - name: getReward
    method: demo.getReward
    arguments:
      - { name: idReward, type: int, required: true }
      - { name: note, type: string, default: "" }
  - { name: price, method: demo.price, arguments: [{ name: price, type: Money, required: true }] }
  - { name: typo, method: demo.echo, arguments: [{ name: txt, type: string }] }
  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string, required: true }] }
`

// TestExplainArgumentsAreTheServedAnswers: with --args, explain binds the
// arguments as the served call does: for each argument problem
// its answer is, byte for byte, what the served pipeline answers the same
// call, and what docs/contract.md §5 writes.
func TestExplainArgumentsAreTheServedAnswers(t *testing.T) {
	t.Parallel()
	e, err := engine.New(context.Background(), source(argsRegistry, nil), engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	for _, caller := range []*toolcall.Caller{
		{Subject: "nora"},
		{Subject: "ann", Roles: []string{"admin", "manager"}, Claims: map[string]any{"team": "x"}},
	} {
		for _, tc := range []struct {
			name, tool, args string
			stage, spec      string
		}{
			{"missing", "getReward", `{}`, StageArguments, "Error: Missing required argument 'idReward'."},
			{"missing, with a defaulted one sent", "getReward", `{"note": "n"}`, StageArguments, "Error: Missing required argument 'idReward'."},
			{"wrong type", "getReward", `{"idReward": "seven"}`, StageArguments, "Error: Invalid value for argument 'idReward': expected int."},
			{"a fraction is no int", "getReward", `{"idReward": 1.5}`, StageArguments, "Error: Invalid value for argument 'idReward': expected int."},
			{"wrong value of an internal type", "price", `{"price": {"amount": "x", "currency": "EUR"}}`, StageArguments, "Error: Invalid value for argument 'price'."},
			{"declared argument the method lacks", "typo", `{"txt": "a"}`, StageArguments, "Error: Unknown argument 'txt'."},
			{"not an object: read as {}, as served", "echo", `[1]`, StageArguments, "Error: Missing required argument 'text'."},
			{"arguments that bind", "getReward", `{"idReward": 7}`, StageRun, ""},
		} {
			t.Run(caller.Subject+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				x := Explain(context.Background(), ExplainOptions{Revision: e.Current(), Caller: caller, Tool: tc.tool,
					Arguments: json.RawMessage(tc.args), Methods: demo.Methods()})
				require.NotNil(t, x.Call)
				require.Equal(t, tc.stage, x.Call.Stage)
				require.Equal(t, tc.spec, x.Call.Answer, "explain's answer is docs/contract.md §5's")

				a := mcpadapter.New(mcpadapter.Options{Revisions: e, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(caller)})
				res := a.Call(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tc.tool, Arguments: json.RawMessage(tc.args)}})
				require.Len(t, res.Content, 1)
				served := res.Content[0].(*mcp.TextContent).Text
				if tc.stage == StageRun {
					assert.True(t, x.Call.Bound, "the arguments were bound")
					assert.False(t, res.IsError, "the served call ran: %s", served)
					return
				}
				require.Equal(t, served, x.Call.Answer, "explain's answer is the served one")
				require.True(t, res.IsError)
			})
		}
	}
}

// TestExplainWithoutArguments: without arguments (or without the methods)
// explain cannot bind, and says the method would run; it does not invent
// a missing-argument answer.
func TestExplainWithoutArguments(t *testing.T) {
	t.Parallel()
	e, err := engine.New(context.Background(), source(argsRegistry, nil), engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	c := &toolcall.Caller{Subject: "nora"}
	for _, o := range []ExplainOptions{
		{Revision: e.Current(), Caller: c, Tool: "getReward", Methods: demo.Methods()},
		{Revision: e.Current(), Caller: c, Tool: "getReward", Methods: demo.Methods(), Arguments: json.RawMessage("")},
		{Revision: e.Current(), Caller: c, Tool: "getReward", Arguments: json.RawMessage(`{}`)},
	} {
		x := Explain(context.Background(), o)
		require.Equal(t, StageRun, x.Call.Stage)
		require.False(t, x.Call.Bound)
		require.Empty(t, x.Call.Answer)
	}
}

// TestCheckArguments: --args must be a JSON object; a server
// reads anything else as {}, a question should not be read as another.
func TestCheckArguments(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{`{}`, ` {"a": 1} `, `{"a": {"b": [1]}}`} {
		assert.NoError(t, CheckArguments(json.RawMessage(ok)), ok)
	}
	for _, bad := range []string{``, `[1]`, `null`, `1`, `"x"`, `{`, `true`} {
		assert.Error(t, CheckArguments(json.RawMessage(bad)), bad)
	}
}
