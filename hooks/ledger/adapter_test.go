package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// TestLedgerThroughAdapters: two adapters (two replicas), each with its own
// Ledger over a shared store, take 50 concurrent calls with one key through
// the real docs/contract.md §5 pipeline: the method runs once.
func TestLedgerThroughAdapters(t *testing.T) {
	t.Parallel()
	e := countEngine(t, "package toolgate.call\n\ndeny contains \"Rule says no.\" if input.request.meta[\"test/deny\"] == true\n")
	var runs atomic.Int32
	// hold, set by each subtest before its concurrent calls, keeps the
	// method running until the others have been answered.
	var hold func()
	methods := methods.Map{}
	methods.Register("demo.count", func(_ context.Context, a struct {
		Key string `json:"key"`
	}) (string, error) {
		if hold != nil {
			hold()
		}
		return fmt.Sprintf("%s=%d", a.Key, runs.Add(1)), nil
	})
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			s, second := kind.open(t)
			subject := "alice/" + newToken()
			var replicas []*mcpadapter.Adapter
			for _, st := range []store.Store{s, second()} {
				a := mcpadapter.New(mcpadapter.Options{Revisions: e, Methods: methods,
					Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: subject})})
				a.AddHook(New(st, Options{}).Hook())
				replicas = append(replicas, a)
			}
			callArgs := func(a *mcpadapter.Adapter, args string, meta mcp.Meta) string {
				res := a.Call(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
					Name: "count", Arguments: json.RawMessage(args), Meta: meta}})
				return res.Content[0].(*mcp.TextContent).Text
			}
			call := func(a *mcpadapter.Adapter, meta mcp.Meta) string { return callArgs(a, `{"key":"k"}`, meta) }
			key := mcp.Meta{"festi/idempotencyKey": "order-1"}
			// A call the policy refuses releases its claim.
			require.Equal(t, "Rule says no.", call(replicas[0], mcp.Meta{"festi/idempotencyKey": "order-1", "test/deny": true}))
			before := runs.Load()
			var (
				wg             sync.WaitGroup
				entered, ended atomic.Int32
				othersEnded    = make(chan struct{})
			)
			// The first method run lasts until the 49 other calls are
			// answered; a second run (a broken claim) does not wait.
			hold = func() {
				if entered.Add(1) == 1 {
					select {
					case <-othersEnded:
					case <-time.After(failureBound):
						t.Error("the other calls were not answered while the method ran")
					}
				}
			}
			answers := make([]string, 50)
			for i := range answers {
				wg.Go(func() {
					answers[i] = call(replicas[i%2], key)
					if ended.Add(1) == 49 {
						close(othersEnded)
					}
				})
			}
			wg.Wait()
			hold = nil
			require.Equal(t, before+1, runs.Load(), "the method ran exactly once")
			first := fmt.Sprintf("k=%d", before+1)
			running := 0
			for _, a := range answers {
				if a != first {
					assert.Equal(t, MsgRunning, a)
					running++
				}
			}
			require.Equal(t, 49, running, "every other call found it running")
			for _, r := range replicas {
				require.Equal(t, first, call(r, key))
			}
			require.Equal(t, MsgConflict, callArgs(replicas[1], `{"key":"other"}`, key))
			require.Equal(t, first, call(replicas[1], mcp.Meta{"festi/idempotencyKey": "order-1", "festi/runId": "r-2"}),
				"other _meta entries do not matter")
		})
	}
}

// countEngine decides over a registry of one tool, count (method
// demo.count, a required string argument key), under the call policy
// callRego.
func countEngine(t *testing.T, callRego string) *engine.Engine {
	t.Helper()
	fsys := fstest.MapFS{
		"registry.yaml":      {Data: []byte("tools:\n  - { name: count, method: demo.count, arguments: [{ name: key, type: string, required: true }] }\n")},
		"policies/call.rego": {Data: []byte(callRego)},
	}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	return e
}
