package shadow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/internal/testkit/shadowtest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// evalBound bounds the engines' policy evaluations: the tests compare
// decisions, and an evaluation that a loaded machine slows past the 250 ms
// default would fail closed and show as a difference. A minute is only a
// failure bound.
var evalBound = engine.WithTimeout(time.Minute)

// engines are the bundled policies (serving) and the candidate: the
// bundled policies with grant.rego replaced by grant.
func engines(t *testing.T, ctx context.Context, grant string) (serving, cand *engine.Engine) {
	t.Helper()
	serving, err := engine.New(ctx, toolgate.Source("", ""), evalBound)
	require.NoError(t, err)
	cand, err = engine.New(ctx, toolgate.Source("", shadowtest.WriteCandidate(t, grant)), evalBound)
	require.NoError(t, err)
	return serving, cand
}

// connect serves serving's revisions to caller through a new adapter with
// observers, over in-memory transports. end closes the client session and
// waits for the server's side to end.
func connect(t *testing.T, ctx context.Context, serving *engine.Engine, caller *toolcall.Caller, observers ...hooks.Observer) (cs *mcp.ClientSession, end func()) {
	t.Helper()
	a := mcpadapter.New(mcpadapter.Options{Revisions: serving, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(caller)})
	for _, o := range observers {
		a.AddObserver(o)
	}
	srv := a.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	return cs, func() {
		_ = cs.Close()
		_ = ss.Wait()
	}
}

// replay re-decides the decision log at logPath with cand.
func replay(t *testing.T, ctx context.Context, logPath string, cand *engine.Revision) *shadow.ReplayResult {
	t.Helper()
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	res, err := shadow.Replay(ctx, f, cand)
	require.NoError(t, err)
	return res
}

// TestShadowShowsExactlyTheCandidatesDifferences: serving the bundled
// policy A with candidate B, which hides price from managers, every caller
// lists and calls every tool; the shadow records exactly price being
// granted→hidden for the manager (in the listing and the call), nothing
// else, and every answer is what A alone answers.
func TestShadowShowsExactlyTheCandidatesDifferences(t *testing.T) {
	ctx := context.Background()
	serving, candEng := engines(t, ctx, benchdata.ManagersLosePrice)
	var mu sync.Mutex
	var got []string
	sh := shadow.New(shadow.Options{Candidate: candEng.Current(), OnDifference: func(d shadow.Difference) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d.Method+" "+d.Tool+" "+d.Subject+" "+d.Kind)
		require.NotEmpty(t, d.Serving.Revision)
		require.NotEqual(t, d.Serving.Revision, d.Candidate.Revision)
	}})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go sh.Run(runCtx)

	callers := []*toolcall.Caller{
		{Subject: "max", Roles: []string{"manager"}},
		{Subject: "cora", Roles: []string{"contractor"}},
		{Subject: "root", Roles: []string{"admin"}},
		{Subject: "nora", Roles: []string{}},
	}
	args := map[string]map[string]any{"echo": {"text": "hi"}, "add": {"a": 1, "b": 2}, "getReward": {"idReward": 7},
		"price": {"price": map[string]any{"amount": "1.50", "currency": "EUR"}}, "inner": {"idReward": 1}, "count": {"key": "k"},
		"sleep": {"ms": 0}, "execUrl": {"url": "https://example.com"}, "resetCounter": {"key": "k"}}
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	dl, err := decisionlog.Open(logPath, decisionlog.Options{})
	require.NoError(t, err)
	answers := func(withShadow bool) map[string]string {
		out := map[string]string{}
		for _, c := range callers {
			var observers []hooks.Observer
			if withShadow {
				observers = []hooks.Observer{dl.Observer(), sh.Observer()}
			}
			cs, end := connect(t, ctx, serving, c, observers...)
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			b, _ := json.Marshal(list.Tools)
			out[c.Subject+" list"] = string(b)
			for _, row := range serving.Current().Registry().Tools {
				if row.Name == "count" || row.Name == "resetCounter" {
					continue // a per-process counter: its answer changes by itself
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: row.Name, Arguments: args[row.Name]})
				require.NoError(t, err)
				b, _ := json.Marshal(res)
				out[c.Subject+" "+row.Name] = string(b)
			}
			end()
		}
		return out
	}
	plain := answers(false)
	shadowed := answers(true)
	sh.Wait()
	require.Equal(t, plain, shadowed, "the shadow changed an answer")
	sort.Strings(got)
	require.Equal(t, []string{
		"tools/call price max " + shadow.GrantedHidden,
		"tools/list price max " + shadow.GrantedHidden,
	}, got)
	st := sh.Status()
	require.Equal(t, uint64(2), st.Differences[shadow.GrantedHidden])
	require.Zero(t, st.Dropped)

	// Replay: the decision log recorded while serving, re-decided with B,
	// shows the differences the shadow saw.
	require.NoError(t, dl.Close(ctx))
	res := replay(t, ctx, logPath, candEng.Current())
	var replayed []string
	for _, d := range res.Differences {
		replayed = append(replayed, d.Method+" "+d.Tool+" "+d.Subject+" "+d.Kind)
	}
	sort.Strings(replayed)
	require.Equal(t, got, replayed)
	require.Empty(t, res.NotReplayable)
	require.Equal(t, res.Decisions, res.Replayed)
	require.Positive(t, res.Decisions)
}

// TestReplayNotReplayable: a candidate whose grant decision reads the
// request's arguments cannot be replayed from a log that holds them as
// hashes: each tools/call grant decision is reported, none is guessed;
// listings are still replayed.
func TestReplayNotReplayable(t *testing.T) {
	ctx := context.Background()
	serving, cand := engines(t, ctx, `package toolgate.grant

granted := {t.name | some t in input.tools; t.base} if {
	input.request.arguments.key != "secret"
}
`)
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	dl, err := decisionlog.Open(logPath, decisionlog.Options{})
	require.NoError(t, err)
	cs, end := connect(t, ctx, serving, &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, dl.Observer())
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	end()
	require.NoError(t, dl.Close(ctx))
	res := replay(t, ctx, logPath, cand.Current())
	require.Equal(t, 2, res.Decisions)
	require.Equal(t, 1, res.Replayed)
	require.Len(t, res.NotReplayable, 1)
	require.Equal(t, "echo", res.NotReplayable[0].Tool)
	require.Contains(t, res.NotReplayable[0].Why, "input.request")
}

// TestShadowCandidateThatDoesNotCompileIsNeverEvaluated: the compile error
// is in Status, and no decision is compared.
func TestShadowCandidateThatDoesNotCompileIsNeverEvaluated(t *testing.T) {
	ctx := context.Background()
	_, err := engine.New(ctx, toolgate.Source("", shadowtest.WriteCandidate(t, "package toolgate.grant\n\ngranted := {x |")), evalBound)
	require.Error(t, err)
	sh := shadow.New(shadow.Options{Err: err})
	serving, err := engine.New(ctx, toolgate.Source("", ""), evalBound)
	require.NoError(t, err)
	rec := mcpadapter.DryRun(ctx, mcpadapter.DryRunOptions{Revision: serving.Current(), Caller: &toolcall.Caller{Subject: "a", Roles: []string{"admin"}}, Name: "echo"})
	sh.Observer().Call(ctx, &hooks.CallContext{Name: "echo", Caller: &toolcall.Caller{Subject: "a"}, Revision: serving.Current()}, rec)
	st := sh.Status()
	require.Contains(t, st.Error, "grant.rego")
	require.Empty(t, st.Candidate)
	require.Zero(t, st.Compared)
}

// TestShadowQueueFullDropsCounted: with the worker not running, a queue of
// one holds the first comparison and drops the others without blocking
// the caller; the drops are in Status and in toolgate_shadow_dropped_total,
// and the worker, once started, compares the one queued.
func TestShadowQueueFullDropsCounted(t *testing.T) {
	ctx := context.Background()
	serving, cand := engines(t, ctx, benchdata.ManagersLosePrice)
	reg := prometheus.NewRegistry()
	sh := shadow.New(shadow.Options{Candidate: cand.Current(), QueueSize: 1, Registerer: reg})
	max := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	for range 3 {
		rec := mcpadapter.DryRun(ctx, mcpadapter.DryRunOptions{Revision: serving.Current(), Caller: max, Name: "price"})
		sh.Observer().Call(ctx, &hooks.CallContext{Name: "price", Caller: max, Revision: serving.Current()}, rec)
	}
	st := sh.Status()
	require.Equal(t, uint64(2), st.Dropped)
	require.Zero(t, st.Compared)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`# HELP toolgate_shadow_dropped_total Decisions not compared with the candidate because the shadow queue was full.
# TYPE toolgate_shadow_dropped_total counter
toolgate_shadow_dropped_total 2
`), "toolgate_shadow_dropped_total"))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go sh.Run(runCtx)
	sh.Wait()
	st = sh.Status()
	require.Equal(t, uint64(1), st.Compared)
	require.Equal(t, uint64(1), st.Differences[shadow.GrantedHidden])
}

// failingCandidate is a candidate directory: the bundled policies and
// extra, a file whose rules fail to evaluate for every caller.
func failingCandidate(t *testing.T, extra string) *engine.Engine {
	t.Helper()
	grant, err := toolgate.Bundled.ReadFile(toolgate.BundledPolicyDir + "/grant.rego")
	require.NoError(t, err)
	dir := shadowtest.WriteCandidate(t, string(grant))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fail.rego"), []byte(extra), 0o600))
	eng, err := engine.New(context.Background(), toolgate.Source("", dir), evalBound)
	require.NoError(t, err)
	return eng
}

// TestShadowCandidateFailuresAreNotDifferences: a candidate whose call
// rules fail (a conflict: as an evaluation timeout, a failed decision)
// and one whose grant decision fails are counted as candidate failures,
// in Status and in toolgate_shadow_candidate_failures_total, and never
// as differences (a failed call decision used to show as allowed→denied).
func TestShadowCandidateFailuresAreNotDifferences(t *testing.T) {
	ctx := context.Background()
	serving, err := engine.New(ctx, toolgate.Source("", ""), evalBound)
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		extra string
		want  uint64 // failures: the call, and for the grant also the listing
	}{
		{"call rules", "package toolgate.call\n\nclash := 1 if input.caller.subject != \"\"\n\nclash := 2 if input.caller.subject != \"\"\n\ndeny contains \"never\" if clash == 3\n", 1},
		{"grant", "package toolgate.grant\n\nclash := 1 if input.caller.subject != \"\"\n\nclash := 2 if input.caller.subject != \"\"\n\ngranted := {\"echo\"} if clash == 3\n", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			var diffs []string
			sh := shadow.New(shadow.Options{Candidate: failingCandidate(t, c.extra).Current(), Registerer: reg, Share: 1,
				OnDifference: func(d shadow.Difference) { diffs = append(diffs, d.Method+" "+d.Tool+" "+d.Kind) }})
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			go sh.Run(runCtx)
			cs, end := connect(t, ctx, serving, &toolcall.Caller{Subject: "root", Roles: []string{"admin"}}, sh.Observer())
			_, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "serving answers")
			end()
			sh.Wait()
			st := sh.Status()
			require.Empty(t, diffs)
			for k, n := range st.Differences {
				require.Zero(t, n, k)
			}
			require.Equal(t, c.want, st.Failures)
			require.Equal(t, uint64(2), st.Compared)
			require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(`# HELP toolgate_shadow_candidate_failures_total Decisions the shadow candidate failed to take (an evaluation error or timeout); not counted as differences.
# TYPE toolgate_shadow_candidate_failures_total counter
toolgate_shadow_candidate_failures_total %d
`, c.want)), "toolgate_shadow_candidate_failures_total"))
		})
	}
}

// TestShadowDefaultQueueIsSmall: without a QueueSize the queue holds
// DefaultQueueSize comparisons, a small number, and drops and counts the
// rest.
func TestShadowDefaultQueueIsSmall(t *testing.T) {
	ctx := context.Background()
	serving, cand := engines(t, ctx, benchdata.ManagersLosePrice)
	require.LessOrEqual(t, shadow.DefaultQueueSize, 64)
	sh := shadow.New(shadow.Options{Candidate: cand.Current()})
	max := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	rec := mcpadapter.DryRun(ctx, mcpadapter.DryRunOptions{Revision: serving.Current(), Caller: max, Name: "price"})
	for range shadow.DefaultQueueSize + 3 {
		sh.Observer().Call(ctx, &hooks.CallContext{Name: "price", Caller: max, Revision: serving.Current()}, rec)
	}
	require.Equal(t, uint64(3), sh.Status().Dropped)
}

// TestShadowWorkerIsPaced: after a comparison that took d the worker
// rests d×(1/Share−1) before the next (Share 0.25: three times d), read
// on a clock the test moves, so the candidate takes at most its share of
// a core; with Share 1 it does not rest.
func TestShadowWorkerIsPaced(t *testing.T) {
	ctx := context.Background()
	serving, cand := engines(t, ctx, benchdata.ManagersLosePrice)
	max := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	rec := mcpadapter.DryRun(ctx, mcpadapter.DryRunOptions{Revision: serving.Current(), Caller: max, Name: "price"})
	for _, c := range []struct {
		share float64
		rests []time.Duration
	}{
		{0, []time.Duration{30 * time.Millisecond, 30 * time.Millisecond}}, // DefaultShare
		{0.5, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}},
		{1, nil},
	} {
		sh := shadow.New(shadow.Options{Candidate: cand.Current(), Share: c.share})
		var (
			mu    sync.Mutex
			clock = time.Unix(0, 0)
			rests []time.Duration
		)
		shadow.SetPacing(sh, func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(10 * time.Millisecond) // a comparison reads it twice: it takes 10 ms
			return clock
		}, func(_ context.Context, d time.Duration) {
			mu.Lock()
			rests = append(rests, d)
			mu.Unlock()
		})
		for range 2 {
			sh.Observer().Call(ctx, &hooks.CallContext{Name: "price", Caller: max, Revision: serving.Current()}, rec)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			sh.Run(runCtx)
		}()
		sh.Wait()
		stop() // the worker rests after the last comparison, then returns
		<-done
		mu.Lock()
		require.Equal(t, c.rests, rests, "share %v", c.share)
		mu.Unlock()
	}
}

// TestReplayCountsCandidateFailures: replayed with a candidate whose
// grant decision fails, every replayed decision is a candidate failure,
// none a difference.
func TestReplayCountsCandidateFailures(t *testing.T) {
	ctx := context.Background()
	serving, err := engine.New(ctx, toolgate.Source("", ""), evalBound)
	require.NoError(t, err)
	cand := failingCandidate(t, "package toolgate.grant\n\nclash := 1 if input.caller.subject != \"\"\n\nclash := 2 if input.caller.subject != \"\"\n\ngranted := {\"echo\"} if clash == 3\n")
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	dl, err := decisionlog.Open(logPath, decisionlog.Options{})
	require.NoError(t, err)
	cs, end := connect(t, ctx, serving, &toolcall.Caller{Subject: "root", Roles: []string{"admin"}}, dl.Observer())
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	end()
	require.NoError(t, dl.Close(ctx))
	res := replay(t, ctx, logPath, cand.Current())
	require.Equal(t, 2, res.Decisions)
	require.Equal(t, 2, res.Replayed)
	require.Equal(t, 2, res.Failures)
	require.Empty(t, res.Differences)
}
