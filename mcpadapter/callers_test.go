package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// callerKinds are the shapes of caller that hidden ≡ absent must hold for
// (docs/contract.md §2, §5): nobody, signed in without roles (nil, empty, with claims),
// one role (granting by the base decision, by an override, or by nothing),
// many roles, with and without claims. A bug that treats one shape apart
// (a caller without roles answered differently at step 4, say) must fail
// for that shape.
var callerKinds = []struct {
	name   string
	caller *toolcall.Caller
}{
	{"nobody", nil},
	{"no roles (nil)", &toolcall.Caller{Subject: "nora"}},
	{"no roles (empty)", &toolcall.Caller{Subject: "nemo", Roles: []string{}}},
	{"no roles, claims", &toolcall.Caller{Subject: "clara", Claims: map[string]any{"scope": "tools:read", "email": "clara@example.com", "groups": []any{"ops"}}}},
	{"one role, base", &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}},
	{"one role, override", &toolcall.Caller{Subject: "cora", Roles: []string{"contractor"}}},
	{"one role no section lists", &toolcall.Caller{Subject: "aud", Roles: []string{"auditor"}}},
	{"many roles", &toolcall.Caller{Subject: "mo", Roles: []string{"auditor", "manager", "ops"}}},
	{"many roles, override", &toolcall.Caller{Subject: "cid", Roles: []string{"manager", "contractor"}}},
	{"many roles, claims", &toolcall.Caller{Subject: "cla2", Roles: []string{"manager", "ops"}, Claims: map[string]any{"scope": "a b", "nested": map[string]any{"x": 1}}}},
}

// hiddenRows returns the names of the bundled example's rows that the
// caller's tools/list leaves out.
func hiddenRows(t testing.TB, g *governed) []string {
	t.Helper()
	reg := g.eng.Current().Registry()
	cs := g.connectSDK(t, proto20250618, nil)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	listed := toolNames(res)
	var hidden []string
	for _, row := range reg.Tools {
		if !slices.Contains(listed, row.Name) {
			hidden = append(hidden, row.Name)
		}
	}
	return hidden
}

// TestHiddenIsAbsentForEveryCaller: for every kind of caller, every row its
// listing hides answers a tools/call byte for byte like a name no row has
// (apart from id and the echoed name), for fixed and random arguments and
// _meta, under the oldest and the newest protocol revision, with the
// decision cache on and off. And the answer for a name no row has is the
// same bytes whoever asks: docs/contract.md §5's text, nothing else.
func TestHiddenIsAbsentForEveryCaller(t *testing.T) {
	t.Parallel()
	const absent = "noRowHasThisName"
	fixed := []struct{ args, meta string }{
		{`{}`, `{}`},
		{`{"idReward":7,"note":"n","url":"http://x","key":"k","text":"t","ms":1,"price":{"amount":"1.00","currency":"EUR"}}`, `{}`},
		{`{"idReward":"seven"}`, `{"festi/idempotencyKey":"k-1"}`},
		{`[1,2]`, `{"festi/approvedBy":"ann"}`},
		{`null`, `null`},
		{`"x"`, `[1]`},
		{`{"a":{"b":{"c":{"d":{"e":1}}}}}`, `{"io.modelcontextprotocol/related-task":{"taskId":"t"},"deep":{"a":{"b":{"c":{"d":1}}}}}`},
		{`{"n":123456789012345678901234567890}`, `{"n":1e400}`},
	}
	// absentAnswers[proto][i] is the answer for the absent name with
	// fixed[i], which every caller must get alike.
	var absentAnswers [2]map[int]string
	for i := range absentAnswers {
		absentAnswers[i] = map[int]string{}
	}
	for _, cache := range []bool{true, false} {
		for _, ck := range callerKinds {
			g := newGoverned(t, setup{caller: ck.caller, opts: []engine.Option{engine.WithDecisionCache(cache)}})
			hidden := []string{"echo", "execUrl", "resetCounter"} // nobody: every row
			if ck.caller != nil {
				hidden = hiddenRows(t, g)
			}
			require.NotEmpty(t, hidden, "%s: the test needs a caller with hidden rows", ck.name)
			r := rand.New(rand.NewPCG(uint64(len(ck.name)), 7))
			for pi, proto := range []string{proto20250618, proto20260728} {
				c := g.connectRaw(t, proto)
				cases := fixed
				for range 3 {
					cases = append(cases[:len(cases):len(cases)], struct{ args, meta string }{randomJSON(r, 0), randomJSON(r, 0)})
				}
				for i, tc := range cases {
					meta := tc.meta
					params := func(name string) string {
						return fmt.Sprintf(`{"name":%q,"arguments":%s,"_meta":%s}`, name, tc.args, meta)
					}
					if _, ok := c.prepare(`{"params":` + params("x") + `}`); !ok {
						meta = "{}" // the newest revision needs an object to carry its keys
					}
					abs := string(normaliseID(c.call(params(absent))))
					res := toolResult(t, []byte(abs))
					want := "Error: Unknown tool '" + absent + "'."
					if ck.caller != nil && engine.CheckArguments(json.RawMessage(tc.args)) != nil {
						// Arguments no input can hold fail the decision at
						// step 3, for every name alike (docs/contract.md §3).
						want = "Error: Tool access could not be verified."
					}
					require.Equal(t, want, resultText(t, res), "%s (%s) args=%s", ck.name, proto, tc.args)
					require.True(t, res.IsError)
					require.Nil(t, res.StructuredContent, "%s (%s)", ck.name, proto)
					if i < len(fixed) {
						if want, ok := absentAnswers[pi][i]; ok {
							require.Equal(t, want, abs, "%s (%s, cache=%t): a name no row has answers the same whoever asks; args=%s meta=%s", ck.name, proto, cache, tc.args, meta)
						} else {
							absentAnswers[pi][i] = abs
						}
					}
					for _, name := range hidden {
						hid := normaliseID(c.call(params(name)))
						hid = bytes.Replace(hid, []byte("'"+name+"'"), []byte("'"+absent+"'"), 1)
						require.Equal(t, abs, string(hid), "%s (%s, cache=%t): hidden %s differs from absent; args=%.200s meta=%.200s", ck.name, proto, cache, name, tc.args, meta)
					}
				}
			}
			for _, o := range g.after.outcomes() {
				// Only a failed grant decision (arguments no input can
				// hold) reaches the after hooks; no before hook ever runs.
				require.Equal(t, "refused_gate", o, "%s: no hook runs for a hidden or absent tool", ck.name)
			}
		}
	}
}

// TestNoRolesCallerIsServed pins the other half for a caller without
// roles: a row without a section is granted and runs (so the hidden rows
// above are hidden by the decision, not by the caller being ignored).
func TestNoRolesCallerIsServed(t *testing.T) {
	t.Parallel()
	for _, c := range []*toolcall.Caller{{Subject: "nora"}, {Subject: "clara", Claims: map[string]any{"scope": "x"}}} {
		g := newGoverned(t, setup{caller: c})
		cs := g.connectSDK(t, proto20250618, nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		require.Equal(t, "hi", resultText(t, res))
		require.Equal(t, []string{"result"}, g.after.outcomes())
	}
}
