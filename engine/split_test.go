package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// TestSplitMode pins which of the fuzzer's shapes are split, and that
// DecisionMode says so: the fuzzer compares nothing if nothing is split.
func TestSplitMode(t *testing.T) {
	t.Parallel()
	// Shape 1's rows read the request after a request-independent
	// condition: that prefix is computed once per caller (TestSplitRowsMode).
	whole := []int{12, 16, 20}
	for i := range splitShapes {
		rev, off := splitEnginesFor(t, i)
		ok, why := rev.DecisionMode()
		require.False(t, ok, why)
		if slices.Contains(whole, i) {
			require.Contains(t, why, "; evaluated whole: no part of it depends on the caller alone", "shape %d", i)
		} else {
			require.Contains(t, why, "; split: once per caller: ", "shape %d", i)
		}
		_, why = off.DecisionMode()
		require.True(t, strings.HasSuffix(why, "; evaluated whole (the decision cache is off)"), why)
	}
	_, why := newEngine(t, map[string]string{"grant.rego": metaPolicy}).Current().DecisionMode()
	require.Equal(t, `reads input.request.meta["festi/echo"] at policies/grant.rego:4; evaluated whole: no part of it depends on the caller alone`, why)
	_, why = newEngine(t, map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[0] + "\n"}).Current().DecisionMode()
	require.Equal(t, "reads input.request.meta.all at policies/grant.rego:5; split: once per caller: the comprehension at policies/grant.rego:3; the rest per call", why)
}

// TestSplitKeepsTheCallerPart: the first call of a caller computes the
// helper and keeps it; later calls read it (one evaluation per call, none
// besides); another caller computes its own.
func TestSplitKeepsTheCallerPart(t *testing.T) {
	t.Parallel()
	policy := "package toolgate.grant\n\nvisible := {t.name | some t in input.tools; t.base}\n\ngranted := visible if not input.request.meta.deny\n"
	rev := newEngine(t, map[string]string{"grant.rego": policy}).Current()
	ctx := context.Background()
	deny := engine.Request{Method: engine.MethodCall, Tool: "echo", Meta: engine.BoundMeta(json.RawMessage(`{"deny":true}`))}
	require.Zero(t, rev.Preloaded(dave))
	// A request that does not need visible computes nothing to keep.
	require.Equal(t, engine.NoOverride, rev.Grant(ctx, dave, deny).Outcome)
	require.Zero(t, rev.Preloaded(dave))
	for range 3 {
		require.Equal(t, []string{"echo", "getReward", "execUrl"}, rev.Grant(ctx, dave, listReq).Granted())
		require.Equal(t, 1, rev.Preloaded(dave))
		require.Equal(t, engine.NoOverride, rev.Grant(ctx, dave, deny).Outcome)
	}
	require.EqualValues(t, 7, rev.Evaluations(), "one evaluation per decision")
	require.Zero(t, rev.Preloaded(carol))
	require.Equal(t, []string{"echo", "getReward", "report", "execUrl"}, rev.Grant(ctx, carol, listReq).Granted())
	require.Equal(t, 1, rev.Preloaded(carol))
	require.Zero(t, rev.CachedDecisions(), "nothing is memoised whole")
}

// TestSplitComputesOnlyWhatTheRequestNeeds: a helper that fails, or that
// would outlive the deadline, is computed only for the requests that need
// it, as in a whole evaluation; a failed call keeps nothing.
func TestSplitComputesOnlyWhatTheRequestNeeds(t *testing.T) {
	t.Parallel()
	policy := `package toolgate.grant

bad := {x | some t in input.tools; x := to_number(t.name)}

slow := {x | some i in numbers.range(1, 100000000); x := sprintf("%d", [i])}

granted := bad if input.request.meta.y == true

granted := slow if input.request.meta.y == "slow"

granted := {t.name | some t in input.tools; t.base} if input.request.meta.y == false
`
	rev := newEngine(t, map[string]string{"grant.rego": policy}, engine.WithTimeout(time.Second)).Current()
	ok, why := rev.DecisionMode()
	require.False(t, ok)
	require.Contains(t, why, "split: once per caller: data.toolgate.grant.bad, data.toolgate.grant.slow, the comprehension at policies/grant.rego:11")
	ctx := context.Background()
	meta := func(s string) engine.Request {
		return engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(json.RawMessage(s))}
	}
	for range 2 {
		require.Equal(t, []string{"echo", "getReward", "execUrl"}, rev.Grant(ctx, dave, meta(`{"y":false}`)).Granted())
		require.Equal(t, 1, rev.Preloaded(dave))
		d := rev.Grant(ctx, dave, meta(`{"y":true}`))
		require.Equal(t, engine.Failed, d.Outcome)
		var pe *engine.PolicyError
		require.ErrorAs(t, d.Err, &pe)
		require.Equal(t, engine.KindBuiltin, pe.Kind)
		require.Equal(t, 1, rev.Preloaded(dave), "a failed call keeps nothing")
	}
	require.EqualValues(t, 4, rev.Evaluations(), "one evaluation per decision, none ahead")
	d := rev.Grant(ctx, dave, meta(`{"y":"slow"}`))
	require.Equal(t, engine.Failed, d.Outcome)
	var pe *engine.PolicyError
	require.ErrorAs(t, d.Err, &pe)
	require.Equal(t, engine.KindTimeout, pe.Kind)
}

// TestSplitConcurrent shares residuals and their preloaded values between
// goroutines (run with -race): every answer is the whole evaluation's.
func TestSplitConcurrent(t *testing.T) {
	t.Parallel()
	policies := map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[2] + "\n"}
	rev := newEngine(t, policies).Current()
	whole := newEngine(t, policies, engine.WithDecisionCache(false)).Current()
	requireSameConcurrently(t, rev, whole, `{"deny":true}`)
}

// requireSameConcurrently asks rev and whole, from 8 goroutines at once,
// for bob's, carol's and dave's tool lists without _meta and with meta, and
// fails t on the first answer of rev that is not whole's.
func requireSameConcurrently(t *testing.T, rev, whole *engine.Revision, meta string) {
	t.Helper()
	ctx := context.Background()
	callers := []*toolcall.Caller{bob, carol, dave}
	reqs := []engine.Request{listReq, {Method: engine.MethodList, Meta: engine.BoundMeta(json.RawMessage(meta))}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				c, req := callers[(g+i)%len(callers)], reqs[i%len(reqs)]
				want := whole.Grant(ctx, c, req)
				got := rev.Grant(ctx, c, req)
				if want.Outcome != got.Outcome || !slices.Equal(want.Granted(), got.Granted()) {
					t.Errorf("%s %s: split %v %v, whole %v %v", c.Subject, req.Meta, got.Outcome, got.Granted(), want.Outcome, want.Granted())
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestEqualValuesAreShared: callers whose memoised or precomputed values
// are equal share one copy (4 096 copies of a set of 10 000 rows would
// cost hundreds of MiB).
func TestEqualValuesAreShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rev := newEngine(t, map[string]string{"grant.rego": contractorPolicy}).Current()
	a := rev.Grant(ctx, dave, listReq)
	b := rev.Grant(ctx, &toolcall.Caller{Subject: "erin", Roles: dave.Roles}, listReq)
	require.NotSame(t, a, b)
	require.Equal(t, engine.Override, a.Outcome)
	require.True(t, engine.SharesGranted(a, b), "equal override sets are one copy")
	require.Equal(t, 1, rev.CanonValues())

	split := newEngine(t, map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[2] + "\n"}).Current()
	for _, c := range []*toolcall.Caller{dave, {Subject: "erin", Roles: dave.Roles}} {
		require.Equal(t, []string{"echo", "getReward", "execUrl"}, split.Grant(ctx, c, listReq).Granted())
	}
	require.Equal(t, 1, split.CanonValues(), "one precomputed value for both callers")
	x, y := split.Grant(ctx, dave, listReq), split.Grant(ctx, &toolcall.Caller{Subject: "erin", Roles: dave.Roles}, listReq)
	require.True(t, engine.SharesGranted(x, y))
}

// TestSplitKeepsTheSetOnce: a split residual keeps the canonical copy of
// the override set it checked last, not the set its first call evaluated
// afresh (as large as the registry, once per caller); a later call whose
// granted is the preloaded value is answered from that copy, with the
// flags per row that precompute derives, also when the value was first
// kept as a precomputed one.
func TestSplitKeepsTheSetOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rev := newEngine(t, map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[2] + "\n"}).Current()
	erin := &toolcall.Caller{Subject: "erin", Roles: dave.Roles}
	for _, c := range []*toolcall.Caller{dave, erin} {
		first := rev.Grant(ctx, c, listReq)
		require.Equal(t, []string{"echo", "getReward", "execUrl"}, first.Granted())
		require.True(t, rev.ReusedLast(c, first), "the residual holds the canonical copy")
		require.True(t, engine.HasRowFlags(first))
		for range 2 {
			d := rev.Grant(ctx, c, listReq)
			require.Equal(t, []string{"echo", "getReward", "execUrl"}, d.Granted())
			require.True(t, engine.SharesGranted(first, d))
			require.True(t, engine.HasRowFlags(d))
		}
	}
	require.Equal(t, 1, rev.CanonValues())
}
