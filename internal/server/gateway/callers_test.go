package gateway_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
)

// httpCallers are the kinds of caller a tokens file can name, besides
// nobody: without roles (with and without claims), one role, many roles,
// with claims.
var httpCallers = []*toolcall.Caller{
	{Subject: "nora"},
	{Subject: "clara", Claims: map[string]any{"scope": "tools:read", "email": "clara@example.com"}},
	{Subject: "max", Roles: []string{"manager"}},
	{Subject: "cora", Roles: []string{"contractor"}},
	{Subject: "mo", Roles: []string{"auditor", "manager", "ops"}},
	{Subject: "cid", Roles: []string{"manager", "contractor"}, Claims: map[string]any{"groups": []any{"a", "b"}}},
}

// TestHiddenIsAbsentOverHTTPForEveryCaller: over streamable HTTP through
// gateway.Run, under every protocol revision, each row a caller's listing
// hides answers a go-sdk client exactly like a name no row has (the whole
// result, _meta included), for nobody and every kind of signed-in caller;
// and the answer for a name no row has is the same whoever asks.
func TestHiddenIsAbsentOverHTTPForEveryCaller(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	entries := map[string]identity.TokenEntry{}
	for _, c := range httpCallers {
		entries[tokenFor(c)] = identity.TokenEntry{Subject: c.Subject, Roles: c.Roles, Claims: c.Claims}
	}
	tokens := mcptest.WriteTokens(t, dir, entries)
	g := startGateway(t, gateway.Config{Serve: config.Serve{Tokens: tokens, Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl")}})

	const absent = "noRowHasThisName"
	ctx := context.Background()
	for _, proto := range protocols {
		absentAnswer := ""
		for _, c := range append([]*toolcall.Caller{nil}, httpCallers...) {
			who := "nobody"
			if c != nil {
				who = c.Subject
			}
			cs := connect(t, ctx, g.url, proto, c)
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			listed := map[string]bool{}
			for _, tl := range list.Tools {
				listed[tl.Name] = true
			}
			var hidden []string
			for _, name := range []string{"echo", "getReward", "price", "count", "execUrl", "resetCounter"} {
				if !listed[name] {
					hidden = append(hidden, name)
				}
			}
			require.NotEmpty(t, hidden, "%s: the test needs a caller with hidden rows", who)
			call := func(name string, args map[string]any, meta mcp.Meta) string {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
				require.NoError(t, err, "%s (%s): a JSON-RPC error reached the client", who, proto)
				b, err := json.Marshal(res)
				require.NoError(t, err)
				return string(b)
			}
			for _, req := range []struct {
				args map[string]any
				meta func() mcp.Meta // fresh each call: the SDK adds its keys in place
			}{
				{nil, func() mcp.Meta { return nil }},
				{map[string]any{"idReward": 7, "url": "http://x", "key": "k", "text": "t"}, func() mcp.Meta { return mcp.Meta{"festi/idempotencyKey": "k-1"} }},
				{map[string]any{"idReward": "seven"}, func() mcp.Meta {
					return mcp.Meta{"festi/approvedBy": "ann", "deep": map[string]any{"a": map[string]any{"b": 1}}}
				}},
			} {
				abs := call(absent, req.args, req.meta())
				require.Contains(t, abs, `"text":"Error: Unknown tool '`+absent+`'."`, "%s (%s)", who, proto)
				if absentAnswer == "" {
					absentAnswer = abs
				}
				require.Equal(t, absentAnswer, abs, "%s (%s): a name no row has answers the same whoever asks", who, proto)
				for _, name := range hidden {
					hid := strings.Replace(call(name, req.args, req.meta()), "'"+name+"'", "'"+absent+"'", 1)
					require.Equal(t, abs, hid, "%s (%s): hidden %s differs from absent", who, proto, name)
				}
			}
		}
	}
	require.NoError(t, g.stop(), "graceful shutdown")
}
