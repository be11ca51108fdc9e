package approvals_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/store"
)

// TestConfirmation: data.toolgate.call.confirm asks the user through MCP
// elicitation before the call runs (docs/contract.md §13).
func TestConfirmation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want    string
		isError bool
		runs    int
	}{
		{"accepted with yes", answer("accept", map[string]any{"confirm": true}), "ran t", false, 1},
		{"accepted with no", answer("accept", map[string]any{"confirm": false}), "The call was not confirmed.", true, 0},
		{"declined", answer("decline", nil), "The call was not confirmed.", true, 0},
		{"cancelled", answer("cancel", nil), "The call was not confirmed.", true, 0},
		{"a client without the elicitation capability", nil, "This tool needs a confirmation your client cannot show.", true, 0},
	} {
		for _, proto := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, store.NewMemoryStore())
				var asked []string
				var opts *mcp.ClientOptions
				if tc.handler != nil {
					opts = &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked = append(asked, req.Params.Message)
						return tc.handler(ctx, req)
					}}
				}
				cs := e.connectProto(t, alice, opts, proto)
				text, isErr := call(t, cs, "ask", "t")
				assert.Equal(t, tc.want, text)
				assert.Equal(t, tc.isError, isErr)
				assert.Equal(t, tc.runs, e.ran("t"))
				if tc.handler != nil {
					require.Equal(t, []string{"Run ask on this target?"}, asked)
				}
				// A tool without confirm never asks.
				asked = nil
				text, isErr = call(t, cs, "free", "u")
				assert.Equal(t, "ran u", text)
				assert.False(t, isErr)
				assert.Empty(t, asked)
			})
		}
	}
}

func answer(action string, content map[string]any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: action, Content: content}, nil
	}
}

// TestUnaskedConfirmationAnswersIgnored: inputResponses the server did
// not ask for never stand for the user's confirmation: sent up front (by
// a client of any revision, also one without elicitation), with a forged
// requestState, or replayed with another call's arguments. The question
// is asked instead.
func TestUnaskedConfirmationAnswersIgnored(t *testing.T) {
	t.Parallel()
	yes := mcp.InputResponseMap{"toolgate.confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}
	for _, proto := range []string{"2025-06-18", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, store.NewMemoryStore())
			cs := e.connectProto(t, alice, nil, proto) // no elicitation capability
			for _, state := range []string{"", "forged"} {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"target": "t"},
					InputResponses: yes, RequestState: state})
				require.NoError(t, err)
				require.Len(t, res.Content, 1)
				assert.Equal(t, "This tool needs a confirmation your client cannot show.", res.Content[0].(*mcp.TextContent).Text)
				assert.Zero(t, e.ran("t"), "an unasked answer ran the call (state %q)", state)
			}
		})
	}
}
