package shadow_test

import (
	"context"
	"encoding/json"
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
