package mcpadapter_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	toolgate "github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// historyRegistry is the example registry keeping ten minutes of history,
// getReward remembering its id and echo its text.
func historyRegistry() string {
	reg := "history: {per: 10m, max: 50}\n" + string(toolgate.ExampleRegistry())
	reg = strings.Replace(reg, "    method: demo.getReward\n", "    method: demo.getReward\n    remember: [idReward]\n", 1)
	return strings.Replace(reg, "    method: demo.echo\n", "    method: demo.echo\n    remember: [text]\n", 1)
}

// readFirst refuses add(a) unless the caller read reward a successfully.
const readFirst = `package toolgate.call

deny contains "read the reward first" if {
	input.tool.name == "add"
	not read_first
}

read_first if {
	some h in input.history
	h.tool == "getReward"
	h.outcome == "result"
	h.arguments.idReward == input.request.arguments.a
}
`

// countingHistory counts the loads of a history.
type countingHistory struct {
	hooks.History
	loads atomic.Int64
}

func (c *countingHistory) Load(ctx context.Context, source, subject string, per time.Duration, max int) (engine.History, error) {
	c.loads.Add(1)
	return c.History.Load(ctx, source, subject, per, max)
}

// TestReadBeforeDelete (docs/contract.md §20): a call that reaches step 5
// is recorded for its caller with its remembered arguments and audit
// outcome; a policy reads them in input.history: add(a) runs only after a
// successful getReward of the same id by the same caller — another
// caller's read does not count, nor a refused one. A hidden tool's call
// is never recorded.
func TestReadBeforeDelete(t *testing.T) {
	t.Parallel()
	shared := &countingHistory{History: ledger.NewHistory(store.NewMemoryStore(), nil)}
	policies := map[string]string{"history.rego": readFirst}
	manager := newGoverned(t, setup{registry: historyRegistry(), policies: policies, caller: maxCaller, history: shared})
	other := newGoverned(t, setup{registry: historyRegistry(), policies: policies, history: shared,
		caller: &toolcall.Caller{Subject: "olga", Roles: []string{"manager"}}})
	nobody := newGoverned(t, setup{registry: historyRegistry(), policies: policies, history: shared,
		caller: &toolcall.Caller{Subject: "max", Roles: []string{"intern"}}})
	m, o, n := manager.connectRaw(t, proto20250618), other.connectRaw(t, proto20250618), nobody.connectRaw(t, proto20250618)

	refused := `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"read the reward first"}],"isError":true}}`
	assert.Equal(t, fmt.Sprintf(refused, 1), string(m.call(`{"name":"add","arguments":{"a":7,"b":1}}`)), "nothing read yet")
	// The same subject without the role: getReward is hidden, its call
	// never recorded (docs/contract.md §5: hidden is absent).
	assert.Contains(t, string(n.call(`{"name":"getReward","arguments":{"idReward":7}}`)), "Unknown tool 'getReward'")
	assert.Equal(t, fmt.Sprintf(refused, 2), string(m.call(`{"name":"add","arguments":{"a":7,"b":1}}`)), "a hidden call is not in the history")
	// Another caller reads 7: not this caller's history.
	assert.NotContains(t, string(o.call(`{"name":"getReward","arguments":{"idReward":7}}`)), "isError")
	assert.Equal(t, fmt.Sprintf(refused, 3), string(m.call(`{"name":"add","arguments":{"a":7,"b":1}}`)), "another caller's read")
	// A read of another id, then of 7.
	assert.NotContains(t, string(m.call(`{"name":"getReward","arguments":{"idReward":8}}`)), "isError")
	assert.Equal(t, fmt.Sprintf(refused, 5), string(m.call(`{"name":"add","arguments":{"a":7,"b":1}}`)))
	assert.NotContains(t, string(m.call(`{"name":"getReward","arguments":{"idReward":7}}`)), "isError")
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"8"}]}}`, string(m.call(`{"name":"add","arguments":{"a":7,"b":1}}`)))

	h, err := shared.History.Load(context.Background(), hooks.SourceLocal, "max", time.Hour, 100)
	require.NoError(t, err)
	var got []string
	for _, e := range h {
		got = append(got, e.Tool+" "+e.Outcome+" "+string(e.Arguments))
	}
	assert.Equal(t, []string{
		`add result {}`, `getReward result {"idReward":7}`, `add denied {}`, `getReward result {"idReward":8}`,
		`add denied {}`, `add denied {}`, `add denied {}`,
	}, got, "newest first; the hidden call is not there")
	manager.after.mu.Lock()
	end := manager.after.ends[len(manager.after.ends)-1]
	manager.after.mu.Unlock()
	require.NotNil(t, end.History, "the record says what the decision read")
	assert.Equal(t, 6, end.History.Entries())
	assert.Equal(t, "getReward", end.History.History[0].Tool, "the newest entry it read")
}

// TestHistoryLoadedOnlyWhenRead: a policy that does not read
// input.history never loads it, yet every call is recorded; one that
// reads it loads it on every call (never memoised); remembered values
// over 256 bytes of JSON are kept as their SHA-256; a store that cannot
// answer fails the call closed.
func TestHistoryLoadedOnlyWhenRead(t *testing.T) {
	t.Parallel()
	h := &countingHistory{History: ledger.NewHistory(store.NewMemoryStore(), nil)}
	g := newGoverned(t, setup{registry: historyRegistry(), caller: maxCaller, history: h})
	c := g.connectRaw(t, proto20250618)
	long := strings.Repeat("x", 300)
	for range 3 {
		c.call(`{"name":"echo","arguments":{"text":"hi"}}`)
	}
	c.call(`{"name":"echo","arguments":{"text":"` + long + `"}}`)
	assert.Zero(t, h.loads.Load(), "no policy reads input.history")
	es, err := h.History.Load(context.Background(), hooks.SourceLocal, "max", time.Hour, 100)
	require.NoError(t, err)
	require.Len(t, es, 4)
	assert.Equal(t, `{"text":"sha256:`, string(es[0].Arguments[:16]))
	assert.Len(t, string(es[0].Arguments), len(`{"text":"sha256:"}`)+64)
	assert.Equal(t, `{"text":"hi"}`, string(es[1].Arguments))

	reads := newGoverned(t, setup{registry: historyRegistry(), caller: maxCaller, history: h, policies: map[string]string{"history.rego": `package toolgate.call

deny contains "enough" if count(input.history) >= 5
`}})
	rc := reads.connectRaw(t, proto20250618)
	assert.NotContains(t, string(rc.call(`{"name":"echo","arguments":{"text":"hi"}}`)), "isError")
	assert.Contains(t, string(rc.call(`{"name":"echo","arguments":{"text":"hi"}}`)), "enough")
	assert.Equal(t, int64(2), h.loads.Load(), "loaded per call")

	broken := newGoverned(t, setup{registry: historyRegistry(), caller: maxCaller, history: failingHistory{}, policies: map[string]string{"history.rego": `package toolgate.call

deny contains "enough" if count(input.history) >= 6
`}})
	bc := broken.connectRaw(t, proto20250618)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Error: An internal error occurred while executing the tool."}],"isError":true}}`,
		string(bc.call(`{"name":"echo","arguments":{"text":"hi"}}`)))
	assert.Equal(t, toolcall.StageRuleFailed, broken.after.lastEnd(t).Stage)
	assert.Contains(t, broken.logs.String(), "could not record the call in the caller's history")
}

type failingHistory struct{}

func (failingHistory) Load(context.Context, string, string, time.Duration, int) (engine.History, error) {
	return nil, ledger.ErrHistoryStore
}

func (failingHistory) Record(context.Context, string, string, engine.HistoryEntry, time.Duration, int) error {
	return ledger.ErrHistoryStore
}
