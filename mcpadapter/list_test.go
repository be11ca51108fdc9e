package mcpadapter_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolcall"
)

func toolNames(res *mcp.ListToolsResult) []string {
	out := []string{}
	for _, t := range res.Tools {
		out = append(out, t.Name)
	}
	return out
}

// TestList drives tools/list (docs/contract.md §6) through a go-sdk client under each
// protocol revision.
func TestList(t *testing.T) {
	t.Parallel()
	failing := map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if input.caller\n\ngranted := {\"add\"} if input.caller\n"}
	cases := []struct {
		name     string
		caller   *toolcall.Caller
		policies map[string]string
		want     []string
		logged   string
	}{
		{"nobody sees nothing", nil, nil, []string{}, ""},
		{"base decision, registry order", &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, nil,
			[]string{"echo", "add", "getReward", "price", "fail", "inner", "count", "sleep"}, ""},
		{"override", &toolcall.Caller{Subject: "cid", Roles: []string{"manager", "contractor"}}, nil,
			[]string{"echo", "add", "getReward", "price", "fail", "inner", "sleep"}, ""},
		{"a failing policy falls back to the base decision, logged", &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, failing,
			[]string{"echo", "add", "getReward", "price", "fail", "inner", "count", "sleep"}, "grant decision failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, proto := range protocols {
				g := newGoverned(t, setup{caller: tc.caller, policies: tc.policies})
				cs := g.connectSDK(t, proto, nil)
				res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
				require.NoError(t, err)
				require.Equal(t, tc.want, toolNames(res), proto)
				require.Equal(t, "private", res.CacheScope, proto)
				if tc.logged != "" {
					require.Contains(t, g.logs.String(), tc.logged, proto)
				} else {
					require.NotContains(t, g.logs.String(), "grant decision failed", proto)
					require.NotContains(t, g.logs.String(), "level=ERROR", proto)
				}
			}
		})
	}
}

// TestListShowsTheBindingSchema: the inputSchema tools/list shows is the
// schema arguments are bound against (one function builds both).
func TestListShowsTheBindingSchema(t *testing.T) {
	t.Parallel()
	g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}})
	cs := g.connectSDK(t, proto20250618, nil)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	b, err := json.Marshal(byName["getReward"])
	require.NoError(t, err)
	require.JSONEq(t, `{
		"name": "getReward", "title": "Get a reward", "description": "Reads one reward by id.",
		"inputSchema": {"type": "object", "required": ["idReward"], "properties": {
			"idReward": {"type": "integer", "description": "Reward id"},
			"note": {"type": "string", "default": ""}}},
		"annotations": {"readOnlyHint": true, "idempotentHint": false}}`, string(b))
	b, err = json.Marshal(byName["price"].InputSchema)
	require.NoError(t, err)
	require.Contains(t, string(b), `"pattern":"^-?[0-9]+(\\.[0-9]{1,2})?$"`, "an internal type's schema is inlined")
}

// TestListPassesAnnotationsThrough: annotations reach the wire exactly as
// the registry has them: no hint added, no unknown key dropped.
func TestListPassesAnnotationsThrough(t *testing.T) {
	t.Parallel()
	reg := `tools:
  - name: wipe
    method: demo.echo
    arguments: [{ name: text, type: string }]
    annotations: { destructiveHint: true, "x-team": { owner: ops } }
  - name: plain
    method: demo.echo
`
	for _, proto := range protocols {
		g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "max"}, registry: reg})
		c := g.connectRaw(t, proto)
		req, ok := c.prepare(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`)
		require.True(t, ok)
		var resp struct {
			Result struct {
				Tools      []map[string]json.RawMessage `json:"tools"`
				CacheScope string                       `json:"cacheScope"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(c.roundTrip(req), &resp))
		require.Len(t, resp.Result.Tools, 2, proto)
		require.JSONEq(t, `{"destructiveHint":true,"x-team":{"owner":"ops"}}`, string(resp.Result.Tools[0]["annotations"]), proto)
		_, has := resp.Result.Tools[1]["annotations"]
		require.False(t, has, "a row without annotations sends none (%s)", proto)
		require.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string"}}}`, string(resp.Result.Tools[0]["inputSchema"]))
		require.Equal(t, "private", resp.Result.CacheScope)
	}
}
