package mcpadapter_test

import (
	"context"
	"encoding/json"
	"math"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// countingLimits is a limit store that admits every call and counts how
// often it was asked.
type countingLimits struct{ asked atomic.Int64 }

func (c *countingLimits) Admit(_ context.Context, limits []engine.Limit) (hooks.LimitCheck, error) {
	c.asked.Add(1)
	ck := hooks.LimitCheck{Admitted: true}
	for _, l := range limits {
		ck.States = append(ck.States, hooks.LimitState{Limit: l})
	}
	return ck, nil
}

func (c *countingLimits) Peek(ctx context.Context, limits []engine.Limit) (hooks.LimitCheck, error) {
	return c.Admit(ctx, limits)
}

// leastAllocs is, for each of f and g, the fewest allocations one run of
// it made in 100 runs taken in turns (testing.AllocsPerRun of one run),
// with the garbage collector off (it would empty sync.Pools). The fewest,
// because what the code under test did not ask for only adds: a policy
// evaluation's cancellation goroutine is sometimes still alive when the
// next call starts one, and the runtime then allocates a goroutine; under
// the race detector sync.Pool drops a quarter of what it is given.
func leastAllocs(f, g func()) (float64, float64) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	lf, lg := math.Inf(1), math.Inf(1)
	for range 100 {
		lf = min(lf, testing.AllocsPerRun(1, f))
		lg = min(lg, testing.AllocsPerRun(1, g))
	}
	return lf, lg
}

// TestCallsWithoutLimitOrResultRulesDoNoSuchWork (docs/contract.md §18): on a
// policy that defines neither limit nor result rules a served call never
// asks the limit store, records no limits and no result decision, and
// allocates exactly what the same call allocates on an adapter without a
// limit store: nothing is built for limits or results. With the rules,
// the same call asks the store and the result rules. (Not parallel:
// AllocsPerRun counts every goroutine's allocations.)
func TestCallsWithoutLimitOrResultRulesDoNoSuchWork(t *testing.T) {
	for name, removed := range map[string][]string{
		"grant rules only":     {"call.rego", "limits.rego", "result.rego"},
		"grant and call rules": {"limits.rego", "result.rego"},
	} {
		t.Run(name, func(t *testing.T) {
			policies := map[string]string{}
			for _, f := range removed {
				policies[f] = ""
			}
			eng, err := engine.New(context.Background(), writeExample(t, t.TempDir(), setup{policies: policies}), engine.WithTimeout(10*time.Second))
			require.NoError(t, err)
			rev := eng.Current()
			require.False(t, rev.HasResultRules())

			store := &countingLimits{}
			var last hooks.Record
			record := hooks.Hook{Name: "record", After: func(_ context.Context, _ *hooks.CallContext, rec *hooks.Record) error {
				last = *rec
				return nil
			}}
			adapter := func(limits hooks.Limits) *mcpadapter.Adapter {
				a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(maxCaller), Limits: limits})
				a.AddHook(record)
				return a
			}
			withStore, withoutStore := adapter(store), adapter(nil)

			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}}
			ctx := context.Background()
			check := func(a *mcpadapter.Adapter) {
				res := a.Call(ctx, req)
				require.False(t, res.IsError, "%+v", res.Content)
				require.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)
			}
			check(withStore)
			assert.Equal(t, toolcall.OutcomeResult, last.Outcome)
			assert.Nil(t, last.Limits, "no limit counted or read")
			assert.Nil(t, last.ResultDecision, "the result rules were not asked")
			if last.CallDecision != nil {
				assert.Nil(t, last.CallDecision.Limits)
			}
			check(withoutStore)
			assert.Zero(t, store.asked.Load(), "the limit store was never asked")

			if raceDetector && !slices.Contains(removed, "call.rego") {
				// Evaluating the call rules, OPA takes from and gives back to
				// sync.Pools many times a call: no run is free of the race
				// detector's drops. Without it (go test without -race) they compare.
				t.Log("the allocations of an evaluated call are not compared under the race detector")
				return
			}
			without, with := leastAllocs(func() { withoutStore.Call(ctx, req) }, func() { withStore.Call(ctx, req) })
			assert.Equal(t, without, with, "a limit store costs a call without limit rules nothing")
			assert.Zero(t, store.asked.Load(), "nor while measured")
		})
	}

	t.Run("with the rules", func(t *testing.T) {
		limit := `package toolgate.call

limit contains {"key": "echo", "max": 1000, "per": "1h", "reason": "a thousand an hour"} if input.tool.name == "echo"
`
		result := "package toolgate.result\n\nredact contains `secret`\n"
		eng, err := engine.New(context.Background(), writeExample(t, t.TempDir(), setup{policies: map[string]string{"limits.rego": limit, "result.rego": result}}), engine.WithTimeout(10*time.Second))
		require.NoError(t, err)
		require.True(t, eng.Current().HasResultRules())
		store := &countingLimits{}
		var last hooks.Record
		a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(maxCaller), Limits: store})
		a.AddHook(hooks.Hook{Name: "record", After: func(_ context.Context, _ *hooks.CallContext, rec *hooks.Record) error {
			last = *rec
			return nil
		}})
		res := a.Call(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{"text":"a secret"}`)}})
		require.False(t, res.IsError, "%+v", res.Content)
		assert.Equal(t, "a [redacted]", res.Content[0].(*mcp.TextContent).Text)
		assert.EqualValues(t, 1, store.asked.Load())
		require.Len(t, last.Limits, 1)
		assert.NotNil(t, last.ResultDecision)
	})
}
