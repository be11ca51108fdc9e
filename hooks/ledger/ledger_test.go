package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// newCall builds the CallContext the adapter would for a call of tool
// "getReward" by subject with _meta meta and arguments args.
func newCall(subject, meta, args string) *hooks.CallContext {
	return newToolCall(subject, "getReward", meta, args)
}

// newToolCall is newCall for a call of tool (method demo.TOOL).
func newToolCall(subject, tool, meta, args string) *hooks.CallContext {
	return &hooks.CallContext{
		DecisionID: newToken(),
		Name:       tool,
		Tool:       &registry.Tool{Name: tool, Method: "demo." + tool},
		Method:     "demo." + tool,
		Arguments:  json.RawMessage(args),
		Meta:       engine.BoundMeta(json.RawMessage(meta)),
		Caller:     &toolcall.Caller{Subject: subject},
		Start:      time.Now(),
	}
}

func keyMeta(id string) string { return fmt.Sprintf(`{"festi/idempotencyKey":%q}`, id) }

// run plays docs/contract.md §5 steps 5 to 8 for hooks the way the adapter does: before
// halves in order (refusing wins over answering), then the method, then
// every after half once.
func run(t testing.TB, hs []hooks.Hook, call *hooks.CallContext, method func() (*mcp.CallToolResult, error)) *hooks.Record {
	ctx := context.Background()
	end := func() *hooks.Record {
		var (
			denials []hooks.Denial
			reasons []string
			answer  *mcp.CallToolResult
			by      string
		)
		for _, h := range hs {
			if h.Before == nil {
				continue
			}
			v, err := h.Before(ctx, call)
			if err != nil {
				return &hooks.Record{Outcome: toolcall.OutcomeFailed, Err: err}
			}
			if v.Denied {
				denials, reasons = append(denials, hooks.Denial{Reason: v.Reason, Hook: h.Name}), append(reasons, v.Reason)
			} else if v.Result != nil && answer == nil {
				answer, by = v.Result, h.Name
			}
		}
		if len(reasons) > 0 {
			return &hooks.Record{Outcome: toolcall.OutcomeDenied, Result: mcpadapter.TextResult(strings.Join(reasons, "; "), true), Denials: denials}
		}
		if answer != nil {
			return &hooks.Record{Outcome: toolcall.OutcomeAnswered, Result: answer, Answerer: hooks.Answerer{Kind: toolcall.ByHook, Name: by}}
		}
		res, err := method()
		if err != nil {
			return &hooks.Record{Outcome: toolcall.OutcomeFailed, Err: err}
		}
		return &hooks.Record{Outcome: toolcall.OutcomeResult, Result: res}
	}()
	for _, h := range hs {
		if h.After != nil {
			assert.NoError(t, h.After(ctx, call, end), h.Name)
		}
	}
	return end
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) != 1 {
		return fmt.Sprintf("%#v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// counter is a tool method that counts its runs.
// failureBound bounds a wait only so that a hang fails the test instead of
// the whole run: nothing waits on it to synchronise.
const failureBound = time.Minute

type counter struct{ n atomic.Int32 }

func (c *counter) method() (*mcp.CallToolResult, error) {
	n := c.n.Add(1)
	return mcpadapter.TextResult(fmt.Sprintf("run %d", n), false), nil
}

func TestLedgerHook(t *testing.T) {
	t.Parallel()
	const args = `{"idReward":7}`
	deny := hooks.Hook{Name: "deny", Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
		return hooks.Deny("no"), nil
	}}
	answer := hooks.Hook{Name: "answer", Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
		return hooks.Answer(mcpadapter.TextResult("answered", false)), nil
	}}
	failing := func() (*mcp.CallToolResult, error) { return nil, errors.New("boom") }

	t.Run("no usable key: the ledger does nothing", func(t *testing.T) {
		t.Parallel()
		l := New(store.NewMemoryStore(), Options{})
		var c counter
		for _, meta := range []string{`{}`, `{"festi/idempotencyKey":""}`, `{"festi/idempotencyKey":7}`,
			`{"festi/idempotencyKey":{"a":"b"}}`, `{"festi/idempotencyKey":null}`, `[]`} {
			for range 2 {
				end := run(t, []hooks.Hook{l.Hook()}, newCall("alice", meta, args), c.method)
				require.Equal(t, toolcall.OutcomeResult, end.Outcome, meta)
			}
		}
		require.EqualValues(t, 12, c.n.Load())
	})

	t.Run("completed key answers the stored result", func(t *testing.T) {
		t.Parallel()
		var replays atomic.Int32
		l := New(store.NewMemoryStore(), Options{OnReplay: func() { replays.Add(1) }})
		var c counter
		end := run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, "run 1", text(end.Result))
		for range 3 {
			end = run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), `{ "idReward" : 7 }`), c.method)
			require.Equal(t, toolcall.OutcomeAnswered, end.Outcome)
			require.Equal(t, HookName, end.AnsweredBy())
			require.Equal(t, "run 1", text(end.Result))
		}
		require.EqualValues(t, 1, c.n.Load())
		require.EqualValues(t, 3, replays.Load())
		end = run(t, []hooks.Hook{l.Hook()}, newCall("bob", keyMeta("k"), args), c.method)
		require.Equal(t, "run 2", text(end.Result), "keys are scoped to the subject")
	})

	t.Run("a method's error result completes too", func(t *testing.T) {
		t.Parallel()
		l := New(store.NewMemoryStore(), Options{})
		end := run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), func() (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream says no"}}, IsError: true,
				StructuredContent: map[string]any{"code": json.Number("42")}}, nil
		})
		require.Equal(t, toolcall.OutcomeResult, end.Outcome)
		end = run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), nil)
		require.Equal(t, toolcall.OutcomeAnswered, end.Outcome)
		require.True(t, end.Result.IsError)
		require.Equal(t, "upstream says no", text(end.Result))
		require.Equal(t, map[string]any{"code": float64(42)}, end.Result.StructuredContent)
	})

	t.Run("running key is refused", func(t *testing.T) {
		t.Parallel()
		l := New(store.NewMemoryStore(), Options{})
		first := newCall("alice", keyMeta("k"), args)
		v, err := l.Hook().Before(context.Background(), first)
		require.NoError(t, err)
		require.Equal(t, hooks.Allow(), v)
		var c counter
		end := run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, toolcall.OutcomeDenied, end.Outcome)
		require.Equal(t, []string{MsgRunning}, end.Reasons())
		require.Zero(t, c.n.Load())
		// The refused call's after half released nothing: still running.
		end = run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, []string{MsgRunning}, end.Reasons())
	})

	t.Run("different arguments conflict", func(t *testing.T) {
		t.Parallel()
		var conflicts atomic.Int32
		l := New(store.NewMemoryStore(), Options{OnConflict: func() { conflicts.Add(1) }})
		var c counter
		run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), c.method)
		end := run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), `{"idReward":8}`), c.method)
		require.Equal(t, toolcall.OutcomeDenied, end.Outcome)
		require.Equal(t, MsgConflict, text(end.Result))
		require.EqualValues(t, 1, conflicts.Load())
		require.EqualValues(t, 1, c.n.Load())
	})

	releases := []struct {
		name   string
		hooks  func(l *Ledger) []hooks.Hook
		method func() (*mcp.CallToolResult, error)
		want   toolcall.Outcome
	}{
		{"failure", func(l *Ledger) []hooks.Hook { return []hooks.Hook{l.Hook()} }, failing, toolcall.OutcomeFailed},
		{"refusal by a later hook", func(l *Ledger) []hooks.Hook { return []hooks.Hook{l.Hook(), deny} }, nil, toolcall.OutcomeDenied},
		{"refusal by an earlier hook", func(l *Ledger) []hooks.Hook { return []hooks.Hook{deny, l.Hook()} }, nil, toolcall.OutcomeDenied},
		{"answer by another hook", func(l *Ledger) []hooks.Hook { return []hooks.Hook{answer, l.Hook()} }, nil, toolcall.OutcomeAnswered},
	}
	for _, r := range releases {
		t.Run("released after "+r.name, func(t *testing.T) {
			t.Parallel()
			l := New(store.NewMemoryStore(), Options{})
			end := run(t, r.hooks(l), newCall("alice", keyMeta("k"), args), r.method)
			require.Equal(t, r.want, end.Outcome)
			var c counter
			end = run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), `{"idReward":9}`), c.method)
			require.Equal(t, toolcall.OutcomeResult, end.Outcome, "the key is free again, also for other arguments")
			require.EqualValues(t, 1, c.n.Load())
		})
	}

	t.Run("a replay refused by another hook releases nothing", func(t *testing.T) {
		t.Parallel()
		l := New(store.NewMemoryStore(), Options{})
		var c counter
		run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), c.method)
		end := run(t, []hooks.Hook{l.Hook(), deny}, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, toolcall.OutcomeDenied, end.Outcome)
		end = run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, toolcall.OutcomeAnswered, end.Outcome)
		require.EqualValues(t, 1, c.n.Load())
	})

	t.Run("two ledgers on one adapter keep their claims apart", func(t *testing.T) {
		t.Parallel()
		a := New(store.NewMemoryStore(), Options{})
		b := New(store.NewMemoryStore(), Options{MetaKey: "other/key"})
		var c counter
		meta := `{"festi/idempotencyKey":"k","other/key":"k"}`
		run(t, []hooks.Hook{a.Hook(), b.Hook()}, newCall("alice", meta, args), c.method)
		end := run(t, []hooks.Hook{a.Hook(), b.Hook()}, newCall("alice", meta, args), c.method)
		require.Equal(t, toolcall.OutcomeAnswered, end.Outcome)
		require.EqualValues(t, 1, c.n.Load())
	})

	t.Run("configured key and lease; takeover by the clock", func(t *testing.T) {
		t.Parallel()
		now := t0
		l := New(store.NewMemoryStore(), Options{MetaKey: "my/key", Lease: time.Second, Now: func() time.Time { return now }})
		stuck := newCall("alice", `{"my/key":"k"}`, args)
		_, err := l.Hook().Before(context.Background(), stuck)
		require.NoError(t, err)
		var c counter
		end := run(t, []hooks.Hook{l.Hook()}, newCall("alice", `{"my/key":"k"}`, args), c.method)
		require.Equal(t, []string{MsgRunning}, end.Reasons())
		now = now.Add(time.Second + time.Millisecond)
		end = run(t, []hooks.Hook{l.Hook()}, newCall("alice", `{"my/key":"k"}`, args), c.method)
		require.Equal(t, "run 1", text(end.Result))
		// The stuck call finally ends: its claim was taken over, and it
		// must not overwrite or release its successor's.
		err = l.Hook().After(context.Background(), stuck, &hooks.Record{Outcome: toolcall.OutcomeResult, Result: mcpadapter.TextResult("stale", false)})
		require.ErrorIs(t, err, store.ErrClaimLost)
		end = run(t, []hooks.Hook{l.Hook()}, newCall("alice", `{"my/key":"k"}`, args), c.method)
		require.Equal(t, "run 1", text(end.Result))
	})

	t.Run("store failure fails the call closed", func(t *testing.T) {
		t.Parallel()
		l := New(brokenStore{}, Options{})
		var c counter
		end := run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, toolcall.OutcomeFailed, end.Outcome)
		require.ErrorContains(t, end.Err, "store down")
		require.Zero(t, c.n.Load())
	})

	t.Run("after half abandoned before the claim returned", func(t *testing.T) {
		t.Parallel()
		s := store.NewMemoryStore()
		gate, entered := make(chan struct{}), make(chan struct{})
		l := New(slowStore{Store: s, gate: gate, entered: entered}, Options{})
		call := newCall("alice", keyMeta("k"), args)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = l.Hook().Before(context.Background(), call)
		}()
		// The before half is inside Claim when the adapter's deadline passes
		// and the after half runs.
		<-entered
		require.NoError(t, l.Hook().After(context.Background(), call, &hooks.Record{Outcome: toolcall.OutcomeFailed, Err: errors.New("deadline")}))
		close(gate)
		<-done
		require.Zero(t, claims(s), "the late claim was released by its before half")
	})
}

type brokenStore struct{}

func (brokenStore) Claim(context.Context, store.Key, string, time.Time, store.Lifetimes) (store.ClaimResult, error) {
	return store.ClaimResult{}, errors.New("store down")
}
func (brokenStore) Complete(context.Context, store.Key, string, []byte, time.Time) error {
	return errors.New("store down")
}
func (brokenStore) Prune(context.Context, time.Time, store.Lifetimes, int) (int, error) {
	return 0, errors.New("store down")
}
func (brokenStore) Release(context.Context, store.Key, string) error { return errors.New("store down") }
func (brokenStore) Close() error                                     { return nil }

// slowStore holds Claim until gate closes, saying when it entered.
type slowStore struct {
	store.Store
	gate, entered chan struct{}
}

func (s slowStore) Claim(ctx context.Context, k store.Key, h string, now time.Time, lt store.Lifetimes) (store.ClaimResult, error) {
	close(s.entered)
	<-s.gate
	return s.Store.Claim(ctx, k, h, now, lt)
}

// TestLedgerConcurrency: 50 calls with one key, through two Ledgers (two
// replicas) sharing a store: the method runs exactly once, every other call
// gets the replay or the running refusal.
func TestLedgerConcurrency(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			s, second := kind.open(t)
			replicas := []*Ledger{New(s, Options{}), New(second(), Options{})}
			subject := "alice/" + newToken()
			var (
				c                 counter
				replays, refusals atomic.Int32
				start             = make(chan struct{})
				wg                sync.WaitGroup
				entered, ended    atomic.Int32
				othersEnded       = make(chan struct{})
			)
			// The first call's method runs until the 49 others have
			// ended: each finds it running. A second method run (a
			// broken claim) does not wait, so it ends among them.
			slow := func() (*mcp.CallToolResult, error) {
				if entered.Add(1) == 1 {
					select {
					case <-othersEnded:
					case <-time.After(failureBound):
						t.Error("the other calls did not end while the method ran")
					}
				}
				return c.method()
			}
			for i := range 50 {
				wg.Go(func() {
					<-start
					end := run(t, []hooks.Hook{replicas[i%2].Hook()}, newCall(subject, keyMeta("k"), `{"idReward":7}`), slow)
					if ended.Add(1) == 49 {
						close(othersEnded)
					}
					switch end.Outcome {
					case toolcall.OutcomeResult:
					case toolcall.OutcomeAnswered:
						replays.Add(1)
						assert.Equal(t, "run 1", text(end.Result))
					case toolcall.OutcomeDenied:
						refusals.Add(1)
						assert.Equal(t, []string{MsgRunning}, end.Reasons())
					default:
						t.Errorf("unexpected outcome %s: %v", end.Outcome, end.Err)
					}
				})
			}
			close(start)
			wg.Wait()
			require.EqualValues(t, 1, c.n.Load(), "the method ran exactly once")
			require.EqualValues(t, 49, refusals.Load(), "every other call found it running")
			require.Zero(t, replays.Load())
			for _, l := range replicas {
				end := run(t, []hooks.Hook{l.Hook()}, newCall(subject, keyMeta("k"), `{"idReward":7}`), slow)
				require.Equal(t, toolcall.OutcomeAnswered, end.Outcome)
				require.Equal(t, "run 1", text(end.Result))
			}
		})
	}
}

// TestLedgerSurvivesRestart: a key completed through the hook is answered
// by a new Ledger over the reopened SQLite file.
func TestLedgerSurvivesRestart(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/ledger.db"
	var c counter
	for i := range 2 {
		s, err := store.OpenSQLite(path)
		require.NoError(t, err)
		end := run(t, []hooks.Hook{New(s, Options{}).Hook()}, newCall("alice", keyMeta("k"), `{"idReward":7}`), c.method)
		require.Equal(t, "run 1", text(end.Result))
		require.Equal(t, []toolcall.Outcome{toolcall.OutcomeResult, toolcall.OutcomeAnswered}[i], end.Outcome)
		require.NoError(t, s.Close())
	}
	require.EqualValues(t, 1, c.n.Load())
}

// TestLedgerKeyScopedToTool: a call of tool B with the
// idempotency key a call of tool A completed runs B and gets B's result, in
// every store; each tool then replays its own result.
func TestLedgerKeyScopedToTool(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			s, _ := kind.open(t)
			l := New(s, Options{})
			subject := "alice/" + newToken()
			var runsA, runsB counter
			methodA := func() (*mcp.CallToolResult, error) {
				runsA.n.Add(1)
				return mcpadapter.TextResult("A's result", false), nil
			}
			methodB := func() (*mcp.CallToolResult, error) {
				runsB.n.Add(1)
				return mcpadapter.TextResult("B's result", false), nil
			}
			const args = `{"idReward":7}`
			end := run(t, []hooks.Hook{l.Hook()}, newToolCall(subject, "toolA", keyMeta("k"), args), methodA)
			require.Equal(t, toolcall.OutcomeResult, end.Outcome)
			end = run(t, []hooks.Hook{l.Hook()}, newToolCall(subject, "toolB", keyMeta("k"), args), methodB)
			require.Equal(t, toolcall.OutcomeResult, end.Outcome, "B ran: the key A completed is not B's")
			require.Equal(t, "B's result", text(end.Result))
			for _, c := range []struct {
				tool, want string
				method     func() (*mcp.CallToolResult, error)
			}{{"toolA", "A's result", methodA}, {"toolB", "B's result", methodB}} {
				end = run(t, []hooks.Hook{l.Hook()}, newToolCall(subject, c.tool, keyMeta("k"), args), c.method)
				require.Equal(t, toolcall.OutcomeAnswered, end.Outcome, c.tool)
				require.Equal(t, c.want, text(end.Result), c.tool)
			}
			require.EqualValues(t, 1, runsA.n.Load())
			require.EqualValues(t, 1, runsB.n.Load())
		})
	}
}
