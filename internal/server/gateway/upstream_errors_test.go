package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// upstreamError is the JSON-RPC error the raw upstream answers every
// tools/call with: a code of its own, <, > and & in its message, data.
const upstreamError = `{"code":-32050,"message":"quota of <team> & co exhausted","data":{"retryAfter":3,"x":["a"]}}`

// TestUpstreamErrorsAsSent (docs/contract.md §19, "Answers as sent"): an
// upstream's JSON-RPC error answer to a granted tools/call reaches the
// client as the upstream sent it — code, message and data — and not as
// the internal error; with result rules in the policy, which cannot see
// an error, the client gets the internal error instead (fail closed). A
// tool the caller may not see still answers exactly as one that does not
// exist: the upstream is never asked.
func TestUpstreamErrorsAsSent(t *testing.T) {
	t.Parallel()
	upURL := rawUpstreamWith(t, nil, map[string]string{"tools/call": upstreamError})
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	bob := &toolcall.Caller{Subject: "bob", Roles: []string{"user"}}
	start := func(t *testing.T, policy string) *running {
		return importGateway{callers: []*toolcall.Caller{ann, bob}, policy: map[string]string{"grant.rego": policy},
			ups: []upstream.Settings{{Name: "up", URL: upURL, Import: true}}}.start(t)
	}
	plain := start(t, "package toolgate.grant\n")
	governed := start(t, "package toolgate.result\n\nredact contains `secret-[0-9]+`\n")
	var want jsonrpc.Error
	require.NoError(t, json.Unmarshal([]byte(upstreamError), &want))
	ctx := context.Background()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			_, err := connect(t, ctx, plain.url, proto, ann).CallTool(ctx, &mcp.CallToolParams{Name: "up.echo", Arguments: map[string]any{}})
			var got *jsonrpc.Error
			require.True(t, errors.As(err, &got), "a JSON-RPC error: %v", err)
			assert.Equal(t, want.Code, got.Code)
			assert.Equal(t, want.Message, got.Message)
			assert.JSONEq(t, string(want.Data), string(got.Data))

			res, err := connect(t, ctx, governed.url, proto, ann).CallTool(ctx, &mcp.CallToolParams{Name: "up.echo", Arguments: map[string]any{}})
			require.NoError(t, err, "with result rules: no JSON-RPC error")
			require.True(t, res.IsError)
			require.Len(t, res.Content, 1)
			assert.Equal(t, "Error: An internal error occurred while executing the tool.", res.Content[0].(*mcp.TextContent).Text)

			// Hidden ≡ absent: bob may not see up.echo.
			cs, rec := recorded(t, plain.url, proto, bob)
			answer := func(name string) string {
				rec.take()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				require.NoError(t, err, name)
				require.True(t, res.IsError, name)
				return strings.ReplaceAll(string(resultIn(t, rec.take())), name, "NAME")
			}
			assert.Equal(t, answer("up.nothing"), answer("up.echo"), "a hidden tool answers as one that does not exist")
		})
	}
}
