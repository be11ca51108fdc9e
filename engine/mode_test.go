package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

func TestDecisionMode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		policies  map[string]string
		cacheable bool
		why       string
	}{
		{"no policy", nil, true, "no rule defines data.toolgate.grant.granted"},
		{"caller and tools only", map[string]string{"grant.rego": contractorPolicy}, true, "reads only input.caller, input.tools and data"},
		{"data and a helper function", map[string]string{
			"grant.rego":               "package toolgate.grant\n\ngranted := {t | some t in data.toolgate.lists.allowed; ok(t)} if input.caller.subject == \"bob\"\n\nok(t) if startswith(t, \"r\")\n",
			"toolgate/lists/data.yaml": "allowed: [report]\n",
		}, true, "the 2 rules behind granted"},
		{"reads _meta", map[string]string{"grant.rego": metaPolicy}, false, `reads input.request.meta["festi/echo"] at policies/grant.rego:4`},
		{"reads the tool called", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {input.request.tool}\n"}, false, "reads input.request.tool at policies/grant.rego:3"},
		{"reads request through another package", map[string]string{
			"grant.rego":   "package toolgate.grant\n\nimport data.lib\n\ngranted := {\"echo\"} if lib.listing\n",
			"lib/lib.rego": "package lib\n\nlisting if input.request.method == \"tools/list\"\n",
		}, false, "reads input.request.method at policies/lib/lib.rego:3"},
		{"reads request through a function", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if flag(\"x\")\n\nflag(k) if input.request.meta[k] == true\n"}, false, "reads input.request.meta at policies/grant.rego:5"},
		{"reads the whole input", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if count(input) > 3\n"}, false, "reads the whole input at policies/grant.rego:3"},
		{"reads input with a dynamic key", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\tsome k\n\tinput[k].tool == \"x\"\n}\n"}, false, "a key the analysis cannot resolve"},
		{"calls time.now_ns", map[string]string{"grant.rego": clockPolicy}, false, "calls time.now_ns, a non-deterministic built-in at policies/grant.rego:4"},
		{"calls rand.intn in a helper", map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if lucky\n\nlucky if rand.intn(\"x\", 2) == 1\n"}, false, "calls rand.intn"},
		{"unrelated rules may read the request", map[string]string{
			"grant.rego": contractorPolicy,
			"call.rego":  "package toolgate.call\n\ndeny contains \"no\" if input.request.meta.x == 1\n",
		}, true, "only input.caller"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rev := newEngine(t, tc.policies).Current()
			ok, why := rev.DecisionMode()
			require.Equal(t, tc.cacheable, ok, why)
			require.Contains(t, why, tc.why)

			off := newEngine(t, tc.policies, engine.WithDecisionCache(false)).Current()
			ok, why = off.DecisionMode()
			require.False(t, ok)
			if tc.cacheable {
				require.Contains(t, why, "the decision cache is off")
			}
		})
	}
}

// metaPolicy grants echo only to calls that carry _meta festi/echo.
const metaPolicy = `package toolgate.grant

granted := {"echo"} if {
	input.request.meta["festi/echo"] == true
}
`

// clockPolicy grants echo in odd nanoseconds.
const clockPolicy = `package toolgate.grant

granted := {"echo"} if {
	time.now_ns() % 2 == 1
}
`

func TestUncacheablePoliciesDecidePerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rev := newEngine(t, map[string]string{"grant.rego": metaPolicy}).Current()
	with := engine.Request{Method: engine.MethodCall, Tool: "echo", Meta: engine.BoundMeta(json.RawMessage(`{"festi/echo": true}`))}
	without := engine.Request{Method: engine.MethodCall, Tool: "echo"}
	for range 3 {
		d := rev.Grant(ctx, bob, with)
		require.Equal(t, engine.Override, d.Outcome)
		require.Equal(t, []string{"echo"}, d.Granted())
		d = rev.Grant(ctx, bob, without)
		require.Equal(t, engine.NoOverride, d.Outcome)
		require.Equal(t, []string{"echo", "execUrl"}, d.Granted())
	}
	require.EqualValues(t, 6, rev.Evaluations())
	require.Zero(t, rev.CachedDecisions())

	// The clock policy is asked every time, and both answers turn up.
	rev = newEngine(t, map[string]string{"grant.rego": clockPolicy}).Current()
	seen := map[engine.Outcome]bool{}
	n := 0
	for ; n < 10000 && len(seen) < 2; n++ {
		seen[rev.Grant(ctx, bob, listReq).Outcome] = true
	}
	require.Len(t, seen, 2, "time.now_ns is read per call")
	require.EqualValues(t, n, rev.Evaluations())
}

func TestDecisionCacheIsHit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rev := newEngine(t, map[string]string{"grant.rego": contractorPolicy}).Current()
	list := rev.Grant(ctx, dave, listReq)
	call := rev.Grant(ctx, dave, engine.Request{Method: engine.MethodCall, Tool: "getReward", Meta: engine.BoundMeta(json.RawMessage(`{"a":1}`))})
	require.Same(t, list, call, "list and call read one value")
	require.Equal(t, []string{"echo", "getReward"}, call.Granted())
	// Another Caller value with the same fingerprint.
	again := rev.Grant(ctx, &toolcall.Caller{Subject: "dave", Roles: []string{"contractor", "manager"}, Claims: map[string]any{}}, listReq)
	require.Same(t, list, again)
	require.EqualValues(t, 1, rev.Evaluations())

	// Every part of the caller is in the key.
	for _, c := range []*toolcall.Caller{
		{Subject: "dave2", Roles: []string{"contractor", "manager"}},
		{Subject: "dave", Roles: []string{"manager", "contractor"}}, // a policy may read roles[0]
		{Subject: "dave", Roles: []string{"contractor", "manager", "manager"}},
		{Subject: "dave", Roles: []string{"contractor", "manager"}, Claims: map[string]any{"tier": "gold"}},
		{Subject: "dave", Roles: []string{"contractor", "manager"}, Claims: map[string]any{"tier": 1.0}},
		{Subject: "dave", Roles: []string{"contractor", "manager"}, Claims: map[string]any{"tier": 1}},
	} {
		require.NotSame(t, list, rev.Grant(ctx, c, listReq), "%+v", c)
	}
	require.EqualValues(t, 7, rev.Evaluations())
	require.Equal(t, 7, rev.CachedDecisions())

	// Concurrent readers of one caller all see one decision.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				require.Same(t, list, rev.Grant(ctx, dave, listReq))
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 7, rev.Evaluations())

	// Switched off, every decision is an evaluation.
	off := newEngine(t, map[string]string{"grant.rego": contractorPolicy}, engine.WithDecisionCache(false)).Current()
	for range 3 {
		require.Equal(t, []string{"echo", "getReward"}, off.Grant(ctx, dave, listReq).Granted())
	}
	require.EqualValues(t, 3, off.Evaluations())
}

func TestFailedDecisionsAreNotCached(t *testing.T) {
	t.Parallel()
	slow := "package toolgate.grant\n\ngranted := {n | some i in numbers.range(1, 100000000); n := sprintf(\"%d\", [i])}\n"
	rev := newEngine(t, map[string]string{"grant.rego": slow}, engine.WithTimeout(20*time.Millisecond)).Current()
	ok, why := rev.DecisionMode()
	require.True(t, ok, why)
	for range 2 {
		d := rev.Grant(context.Background(), carol, listReq)
		require.Equal(t, engine.Failed, d.Outcome)
	}
	require.EqualValues(t, 2, rev.Evaluations())
	require.Zero(t, rev.CachedDecisions())

}

func TestDecisionCacheIsBounded(t *testing.T) {
	t.Parallel()
	get, put := engine.NewDecisionCacheForTest(3)
	d := func(i int) *engine.GrantDecision { return &engine.GrantDecision{Outcome: engine.Outcome(i)} }
	for i := range 3 {
		put(fmt.Sprint(i), d(i))
	}
	require.NotNil(t, get("0")) // 0 is now the most recent; 1 the least
	put("3", d(3))
	require.Nil(t, get("1"), "the least recently used entry is dropped")
	for _, k := range []string{"0", "2", "3"} {
		require.NotNil(t, get(k), k)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	same := [][2]*toolcall.Caller{
		{{Subject: "a"}, {Subject: "a", Roles: []string{}, Claims: map[string]any{}}},
		{{Subject: "a", Claims: map[string]any{"x": []any{1.0, "b"}, "y": map[string]any{"k": true}}},
			{Subject: "a", Claims: map[string]any{"y": map[string]any{"k": true}, "x": []any{1.0, "b"}}}},
	}
	for _, p := range same {
		require.Equal(t, engine.Fingerprint(p[0]), engine.Fingerprint(p[1]))
	}
	differ := []*toolcall.Caller{
		{Subject: "a"},
		{Subject: "a", Roles: []string{""}},
		{Subject: "a", Roles: []string{"b"}},
		{Subject: "ab"},
		{Subject: "a", Roles: []string{"b", "c"}},
		{Subject: "a", Roles: []string{"bc"}},
		{Subject: "a", Claims: map[string]any{"x": "1"}},
		{Subject: "a", Claims: map[string]any{"x": 1.0}},
		{Subject: "a", Claims: map[string]any{"x": json.Number("1")}},
		{Subject: "a", Claims: map[string]any{"x": nil}},
		{Subject: "a", Claims: map[string]any{"x": []any{}}},
		{Subject: "a", Claims: map[string]any{"x": map[string]any{}}},
		{Subject: "a", Claims: map[string]any{"x": struct{ A int }{1}}},
	}
	seen := map[string]int{}
	for i, c := range differ {
		k := engine.Fingerprint(c)
		if j, dup := seen[k]; dup {
			t.Fatalf("callers %d and %d share a fingerprint %q", j, i, k)
		}
		seen[k] = i
	}
}
