package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

// historyEngine loads testRegistry with a history setting and policies.
func historyEngine(t *testing.T, history bool, policies map[string]string, opts ...engine.Option) *engine.Revision {
	t.Helper()
	reg := testRegistry
	if history {
		reg = "history: {per: 10m, max: 50}\n" + reg
	}
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(reg)}, "policies/.keep": {Data: nil}}
	for name, src := range policies {
		fsys["policies/"+name] = &fstest.MapFile{Data: []byte(src)}
	}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, opts...)
	require.NoError(t, err)
	return e.Current()
}

// TestHistoryReads (docs/contract.md §20): the engine tells which
// decisions read input.history — by the same closure analysis as the
// decision cache — so that a policy that does not read it never loads it;
// a grant that reads it is not memoised; without a history setting
// nothing reads it.
func TestHistoryReads(t *testing.T) {
	t.Parallel()
	const callReads = "package toolgate.call\n\ndeny contains \"again\" if {\n\tsome h in input.history\n\th.tool == input.tool.name\n}\n"
	const grantReads = "package toolgate.grant\n\ngranted := {\"echo\"} if count(input.history) > 2\n"
	const helperReads = "package toolgate.call\n\nimport data.lib\n\ndeny contains \"x\" if lib.busy\n"
	const lib = "package lib\n\nbusy if count(input.history) > 2\n"
	const wholeInput = "package toolgate.call\n\ndeny contains \"x\" if count(input) > 100\n"
	const none = "package toolgate.call\n\ndeny contains \"x\" if input.request.arguments.text == \"no\"\n"
	for name, c := range map[string]struct {
		history     bool
		policies    map[string]string
		grant, call bool
	}{
		"call rules":                  {true, map[string]string{"call.rego": callReads}, false, true},
		"the grant":                   {true, map[string]string{"grant.rego": grantReads}, true, true},
		"through a function":          {true, map[string]string{"call.rego": helperReads, "lib.rego": lib}, false, true},
		"the whole input":             {true, map[string]string{"call.rego": wholeInput}, false, true},
		"no rule reads it":            {true, map[string]string{"call.rego": none}, false, false},
		"no history setting":          {false, map[string]string{"call.rego": callReads}, false, false},
		"a helper nobody calls reads": {true, map[string]string{"call.rego": none, "lib.rego": lib}, false, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rev := historyEngine(t, c.history, c.policies)
			grant, call := rev.HistoryReads()
			assert.Equal(t, c.grant, grant, "grant")
			assert.Equal(t, c.call, call, "call")
		})
	}
	rev := historyEngine(t, true, map[string]string{"grant.rego": grantReads})
	cacheable, why := rev.DecisionMode()
	assert.False(t, cacheable)
	assert.Contains(t, why, "reads input.history")
}

// TestHistoryInInput: input.history holds the entries as given (newest
// first), at in RFC 3339 UTC, the remembered arguments exactly; a
// request without a history has no input.history.
func TestHistoryInInput(t *testing.T) {
	t.Parallel()
	rev := historyEngine(t, true, map[string]string{"call.rego": `package toolgate.call

deny contains sprintf("%s %s %s %v", [h.tool, h.at, h.outcome, h.arguments.id]) if {
	some h in input.history
}

deny contains "no history" if not input.history
`})
	at := time.Date(2026, 12, 1, 9, 0, 0, 500, time.FixedZone("x", 3600))
	h := engine.History{{Tool: "echo", At: at, Outcome: "result", Arguments: json.RawMessage(`{"id":12345678901234567890}`)}}
	cd := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{}`), History: h})
	require.NoError(t, cd.Err)
	require.Len(t, cd.Deny, 1)
	assert.Equal(t, "echo 2026-12-01T08:00:00.0000005Z result 12345678901234567890", cd.Deny[0].Message)
	cd = rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{}`)})
	require.NoError(t, cd.Err)
	require.Len(t, cd.Deny, 1)
	assert.Equal(t, "no history", cd.Deny[0].Message)
}

// TestHistoryReadByConcurrentCalls: calls evaluated at once over one
// caller's history, each with its own copy of the entries as a store
// returns them, see every entry (the values a revision keeps for entries
// it converted before are shared by them; run with -race).
func TestHistoryReadByConcurrentCalls(t *testing.T) {
	t.Parallel()
	rev := historyEngine(t, true, map[string]string{"call.rego": `package toolgate.call

deny contains sprintf("%d %v", [count(paid), sort(object.keys(input.history[0].arguments))]) if {
	paid := {h.arguments.to | some h in input.history; h.arguments == {"to": h.arguments.to, "n": h.arguments.n}}
}
`}, engine.WithTimeout(time.Minute)) // -race on a busy machine
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	history := func() engine.History {
		h := make(engine.History, 50)
		for i := range h {
			h[i] = engine.HistoryEntry{Tool: "echo", At: at.Add(-time.Duration(i) * time.Second), Outcome: "result",
				Arguments: json.RawMessage(fmt.Sprintf(`{"to":"acct-%d","n":%d}`, i%7, i))}
		}
		return h
	}
	var wg sync.WaitGroup
	msgs := make([]string, 4)
	for i := range msgs {
		wg.Go(func() {
			for range 3 {
				cd := rev.Call(context.Background(), carol, engine.Request{Method: engine.MethodCall, Tool: "echo", Arguments: json.RawMessage(`{}`), History: history()})
				if cd.Err != nil || len(cd.Deny) != 1 {
					msgs[i] = fmt.Sprintf("%v %v", cd.Err, cd.Deny)
					return
				}
				msgs[i] = cd.Deny[0].Message
			}
		})
	}
	wg.Wait()
	for _, m := range msgs {
		assert.Equal(t, `7 ["n", "to"]`, m)
	}
}
