package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

const conflictPolicy = "package toolgate.grant\n\ngranted := {\"echo\"} if input.caller\n\ngranted := {\"report\"} if input.caller\n"

// grantAll asks for dave's decision from n goroutines at once; the leader
// of the round evaluates only once the n-1 others wait for it.
func grantAll(t *testing.T, rev *engine.Revision, n int) []*engine.GrantDecision {
	t.Helper()
	var joined sync.WaitGroup
	var joins atomic.Int32
	joined.Add(n - 1)
	rev.SetFlightHook(func(lead bool) {
		if lead {
			joined.Wait()
		} else {
			joins.Add(1)
			joined.Done()
		}
	})
	out := make([]*engine.GrantDecision, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = rev.Grant(context.Background(), dave, listReq) })
	}
	wg.Wait()
	require.EqualValues(t, n-1, joins.Load(), "every other call waited for the leader")
	return out
}

func TestConcurrentColdCallsEvaluateOnce(t *testing.T) {
	t.Parallel()
	const n = 16
	rev := newEngine(t, map[string]string{"grant.rego": contractorPolicy}).Current()
	ds := grantAll(t, rev, n)
	require.EqualValues(t, 1, rev.Evaluations(), "one evaluation for the round")
	for _, d := range ds {
		require.Same(t, ds[0], d)
	}
	require.Equal(t, []string{"echo", "getReward"}, ds[0].Granted())
	require.Same(t, ds[0], rev.Grant(context.Background(), dave, listReq), "and it is cached")
	require.EqualValues(t, 1, rev.Evaluations())
}

func TestADeterministicFailureIsSharedNotCached(t *testing.T) {
	t.Parallel()
	const n = 8
	rev := newEngine(t, map[string]string{"grant.rego": conflictPolicy}).Current()
	ds := grantAll(t, rev, n)
	require.EqualValues(t, 1, rev.Evaluations(), "the round's waiters would have got the same")
	for _, d := range ds {
		require.Equal(t, engine.Failed, d.Outcome)
		var pe *engine.PolicyError
		require.ErrorAs(t, d.Err, &pe)
		require.Equal(t, engine.KindEval, pe.Kind)
		require.Equal(t, "eval_conflict_error", pe.Code)
	}
	rev.SetFlightHook(nil)
	d := rev.Grant(context.Background(), dave, listReq)
	require.Equal(t, engine.Failed, d.Outcome)
	require.EqualValues(t, 2, rev.Evaluations(), "a failure is never cached")
	require.Zero(t, rev.CachedDecisions())
}

// lockstep runs a leader's round whose leader waits, in its hook, until
// another call has joined, then runs during(); later rounds do not wait.
func lockstep(rev *engine.Revision, during func()) (leading, joined chan struct{}) {
	leading, joined = make(chan struct{}), make(chan struct{})
	var rounds, joins atomic.Int32
	rev.SetFlightHook(func(lead bool) {
		if lead {
			if rounds.Add(1) == 1 {
				close(leading)
				<-joined
				during()
			}
			return
		}
		if joins.Add(1) == 1 {
			close(joined)
		}
	})
	return leading, joined
}

func TestACancelledLeaderDoesNotFailTheWaiters(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"grant.rego": contractorPolicy}).Current()
	ctx, cancel := context.WithCancel(context.Background())
	leading, _ := lockstep(rev, cancel) // the leader's context ends before it evaluates
	var leader *engine.GrantDecision
	done := make(chan struct{})
	go func() { defer close(done); leader = rev.Grant(ctx, dave, listReq) }()
	await(t, leading)
	waiter := rev.Grant(context.Background(), dave, listReq)
	<-done

	require.Equal(t, engine.Failed, leader.Outcome)
	var pe *engine.PolicyError
	require.ErrorAs(t, leader.Err, &pe)
	require.Equal(t, engine.KindCanceled, pe.Kind)
	require.Equal(t, engine.Override, waiter.Outcome, "the waiter led a round of its own")
	require.Equal(t, []string{"echo", "getReward"}, waiter.Granted())
	require.EqualValues(t, 1, rev.Evaluations(), "the cancelled leader did not evaluate")
	require.Same(t, waiter, rev.Grant(context.Background(), dave, listReq))
	require.EqualValues(t, 1, rev.Evaluations())
}

func TestAWaiterWhoseContextEndsFailsWithItsOwnError(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"grant.rego": contractorPolicy}).Current()
	leader, waiter := cancelledWaiter(t, rev)

	require.Equal(t, engine.Failed, waiter.Outcome)
	var pe *engine.PolicyError
	require.ErrorAs(t, waiter.Err, &pe)
	require.Equal(t, engine.KindCanceled, pe.Kind)
	require.Equal(t, "eval_cancel_error", pe.Code)
	require.ErrorIs(t, waiter.Err, context.Canceled)
	require.Equal(t, engine.Override, leader.Outcome, "the leader is not bothered")
	require.Same(t, leader, rev.Grant(context.Background(), dave, listReq))
}

// cancelledWaiter asks rev for dave's tool list twice: the leader, whose
// evaluation is held until the waiter has asked, and the waiter, who joins
// the leader's round with a context already ended. It returns both
// answers.
func cancelledWaiter(t *testing.T, rev *engine.Revision) (leader, waiter *engine.GrantDecision) {
	t.Helper()
	release := make(chan struct{})
	leading, _ := lockstep(rev, func() { <-release })
	done := make(chan struct{})
	go func() { defer close(done); leader = rev.Grant(context.Background(), dave, listReq) }()
	await(t, leading)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waiter = rev.Grant(ctx, dave, listReq) // joins, then sees its context ended
	close(release)
	<-done
	return leader, waiter
}

// await waits for ch to close; the deadline only bounds a failure.
func await(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no round of cold evaluations began")
	}
}

// A split policy's first calls of one caller wait for the one computing
// the caller's values, then evaluate their own requests with them.
func TestConcurrentFirstSplitCallsWaitForTheFirst(t *testing.T) {
	t.Parallel()
	const n = 8
	policy := map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[2] + "\n"}
	rev := newEngine(t, policy).Current()
	_, why := rev.DecisionMode()
	require.Contains(t, why, "split:")
	want := newEngine(t, policy, engine.WithDecisionCache(false)).Current().Grant(context.Background(), dave, listReq)
	for _, d := range grantAll(t, rev, n) {
		require.Equal(t, want.Outcome, d.Outcome)
		require.Equal(t, want.Granted(), d.Granted())
	}
	require.Equal(t, 1, rev.CanonValues())
}

func TestASplitWaiterWhoseContextEndsFailsWithItsOwnError(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"grant.rego": "package toolgate.grant\n\n" + splitShapes[2] + "\n"}).Current()
	leader, waiter := cancelledWaiter(t, rev)

	require.Equal(t, engine.Failed, waiter.Outcome)
	var pe *engine.PolicyError
	require.ErrorAs(t, waiter.Err, &pe)
	require.Equal(t, engine.KindCanceled, pe.Kind)
	require.Equal(t, engine.Override, leader.Outcome)
	require.Equal(t, []string{"echo", "getReward", "execUrl"}, leader.Granted())
}
