package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

const retention = time.Hour

// failingPruneStore fails every Prune run, and says so on pruned.
type failingPruneStore struct {
	store.Store
	pruned chan struct{}
}

func (s failingPruneStore) Prune(context.Context, time.Time, store.Lifetimes, int) (int, error) {
	select {
	case s.pruned <- struct{}{}:
	default:
	}
	return 0, errors.New("disk on fire")
}

// notifyingStore says on pruned each time a Prune run returns.
type notifyingStore struct {
	store.Store
	pruned chan int
}

func (s notifyingStore) Prune(ctx context.Context, now time.Time, lt store.Lifetimes, limit int) (int, error) {
	n, err := s.Store.Prune(ctx, now, lt, limit)
	s.pruned <- n
	return n, err
}

// TestLedgerAnswersRetriesWithinRetention: through the hook, with the ledger's clock, a
// retry within the retention is answered, one after it runs the call
// again; Prune and RunPruner remove expired keys (a full batch is followed
// by the next run at once).
func TestLedgerAnswersRetriesWithinRetention(t *testing.T) {
	t.Parallel()
	const args = `{"idReward":7}`
	now := t0
	clock := func() time.Time { return now }

	t.Run("retry after the retention runs again", func(t *testing.T) {
		now := t0
		l := New(store.NewMemoryStore(), Options{Retention: retention, Now: func() time.Time { return now }})
		var c counter
		hooks := []hooks.Hook{l.Hook()}
		require.Equal(t, "run 1", text(run(t, hooks, newCall("alice", keyMeta("k"), args), c.method).Result))
		now = t0.Add(retention)
		end := run(t, hooks, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, toolcall.OutcomeAnswered, end.Outcome)
		require.Equal(t, "run 1", text(end.Result))
		now = t0.Add(retention + time.Nanosecond)
		end = run(t, hooks, newCall("alice", keyMeta("k"), args), c.method)
		require.Equal(t, toolcall.OutcomeResult, end.Outcome)
		require.Equal(t, "run 2", text(end.Result))
	})

	t.Run("defaults", func(t *testing.T) {
		l := New(store.NewMemoryStore(), Options{})
		require.Equal(t, 24*time.Hour, l.opts.Retention)
		require.Equal(t, DefaultPruneBatch, l.opts.PruneBatch)
		require.Equal(t, store.DefaultLease, l.opts.Lease)
		require.Equal(t, DefaultMetaKey, l.opts.MetaKey)
	})

	t.Run("RunPruner logs a failed run, and an interval of 0 is the default", func(t *testing.T) {
		st := failingPruneStore{Store: store.NewMemoryStore(), pruned: make(chan struct{}, 1)}
		var log bytes.Buffer
		l := New(st, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.RunPruner(ctx, 0) }()
		<-st.pruned // the first run is at once; the next one is a tick away
		cancel()
		<-done
		require.Equal(t, 1, strings.Count(log.String(), "ledger: pruning expired keys failed"), "log:\n%s", log.String())
		require.Contains(t, log.String(), `error="disk on fire"`, "the store's error is kept for the operator")
	})

	t.Run("Prune and RunPruner", func(t *testing.T) {
		mem := store.NewMemoryStore()
		st := notifyingStore{Store: mem, pruned: make(chan int, 16)}
		l := New(st, Options{Retention: retention, PruneBatch: 2, Now: clock})
		var c counter
		for i := range 3 {
			run(t, []hooks.Hook{l.Hook()}, newCall("alice", keyMeta(fmt.Sprint(i)), args), c.method)
		}
		n, err := l.Prune(context.Background())
		require.NoError(t, err)
		require.Zero(t, n, "nothing expired yet")
		<-st.pruned
		require.Equal(t, 3, claims(mem))

		ctx, cancel := context.WithCancel(context.Background())
		l.opts.Now = func() time.Time { return t0.Add(retention + time.Second) }
		done := make(chan struct{})
		go func() { defer close(done); l.RunPruner(ctx, time.Hour) }()
		// A full batch, then at once the rest: no tick needed.
		require.Equal(t, 2, <-st.pruned)
		require.Equal(t, 1, <-st.pruned)
		cancel()
		<-done
		require.Zero(t, claims(mem))
	})
}
