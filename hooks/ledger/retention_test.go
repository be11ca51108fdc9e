package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

const retention = time.Hour

// TestStoreKeysExpireAfterRetention (docs/contract.md §10): in every store a
// completed key answers its result for its retention, counted from its
// completion, then is as if absent (other arguments claim it too), and
// Prune removes expired keys in bounded runs, leaving the others.
func TestStoreKeysExpireAfterRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lt := Lifetimes{Lease: lease, Retention: retention}
	complete := func(t *testing.T, s Store, k Key, result string, claimed, completed time.Time) {
		t.Helper()
		r, err := s.Claim(ctx, k, "h1", claimed, lt)
		require.NoError(t, err)
		require.Equal(t, Claimed, r.State)
		require.NoError(t, s.Complete(ctx, k, r.Token, []byte(result), completed))
	}
	cases := []struct {
		name string
		run  func(t *testing.T, s Store)
	}{
		{"expires on read after the retention, counted from completion", func(t *testing.T, s Store) {
			k := uniqueKey(t)
			done := t0.Add(lease / 2) // a call that ran for half its lease
			complete(t, s, k, `"r"`, t0, done)
			r, err := s.Claim(ctx, k, "h1", done.Add(retention), lt)
			require.NoError(t, err)
			require.Equal(t, ClaimResult{State: Completed, Result: []byte(`"r"`)}, r, "kept for the whole retention")
			r, err = s.Claim(ctx, k, "h2", done.Add(retention+time.Nanosecond), lt)
			require.NoError(t, err)
			require.Equal(t, Claimed, r.State, "expired: as if absent, for other arguments too")
			require.NoError(t, s.Complete(ctx, k, r.Token, []byte(`"again"`), done.Add(retention+time.Second)))
			r, err = s.Claim(ctx, k, "h2", done.Add(retention+time.Minute), lt)
			require.NoError(t, err)
			require.Equal(t, ClaimResult{State: Completed, Result: []byte(`"again"`)}, r)
		}},
		{"prune removes expired keys, at most limit per run", func(t *testing.T, s Store) {
			var expiredKeys, keptKeys []Key
			for i := range 5 {
				k := Key{Subject: "alice", Tool: "t", ID: fmt.Sprintf("old-%d", i)}
				complete(t, s, k, `"old"`, t0, t0)
				expiredKeys = append(expiredKeys, k)
			}
			now := t0.Add(retention + time.Second)
			fresh := Key{Subject: "alice", Tool: "t", ID: "fresh"}
			complete(t, s, fresh, `"fresh"`, t0, t0.Add(2*time.Second))
			running := Key{Subject: "alice", Tool: "t", ID: "running"}
			r, err := s.Claim(ctx, running, "h1", now.Add(-time.Second), lt)
			require.NoError(t, err)
			require.Equal(t, Claimed, r.State)
			keptKeys = append(keptKeys, fresh)

			var runs []int
			for {
				n, err := s.Prune(ctx, now, lt, 2)
				require.NoError(t, err)
				runs = append(runs, n)
				if n == 0 {
					break
				}
			}
			require.Equal(t, []int{2, 2, 1, 0}, runs, "bounded runs drain the expired keys")
			for _, k := range keptKeys {
				c, err := s.Claim(ctx, k, "h1", t0.Add(3*time.Second), lt)
				require.NoError(t, err)
				require.Equal(t, Completed, c.State, "%s is within its retention", k.ID)
			}
			c, err := s.Claim(ctx, running, "h1", now, lt)
			require.NoError(t, err)
			require.Equal(t, Running, c.State, "a running claim is not pruned")
			for _, k := range expiredKeys {
				c, err := s.Claim(ctx, k, "h2", t0, lt)
				require.NoError(t, err)
				require.Equal(t, Claimed, c.State, "%s was pruned: free even at a time it had not expired", k.ID)
			}
		}},
	}
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					s, _ := kind.open(t)
					c.run(t, s)
				})
			}
		})
	}
}

// TestSharedStoresPruneAbandonedClaims: a running claim whose holder
// is gone (older than both lease and retention) is removed from a shared
// store; a younger one is not.
func TestSharedStoresPruneAbandonedClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lt := Lifetimes{Lease: lease, Retention: retention}
	for _, kind := range storeKinds[1:] {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			s, _ := kind.open(t)
			old, young := Key{Subject: "a", Tool: "t", ID: "old"}, Key{Subject: "a", Tool: "t", ID: "young"}
			_, err := s.Claim(ctx, old, "h1", t0, lt)
			require.NoError(t, err)
			_, err = s.Claim(ctx, young, "h1", t0.Add(time.Second), lt)
			require.NoError(t, err)
			n, err := s.Prune(ctx, t0.Add(retention+time.Nanosecond), lt, 10)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			c, err := s.Claim(ctx, old, "h2", t0, lt)
			require.NoError(t, err)
			require.Equal(t, Claimed, c.State, "removed")
			c, err = s.Claim(ctx, young, "h1", t0.Add(time.Second), lt)
			require.NoError(t, err)
			require.Equal(t, Running, c.State, "kept")
		})
	}
}

// TestMemoryStoreCapDropsOldestCompleted: within the retention the memory store keeps at
// most MaxKeys completed keys and MaxBytes of results, dropping the oldest
// completed first; running claims and the key just completed stay.
func TestMemoryStoreCapDropsOldestCompleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lt := Lifetimes{Lease: lease, Retention: retention}
	key := func(i int) Key { return Key{Subject: "alice", Tool: "t", ID: fmt.Sprint(i)} }
	fill := func(t *testing.T, s *MemoryStore, from, to int, result []byte) {
		for i := from; i < to; i++ {
			r, err := s.Claim(ctx, key(i), "h", t0, lt)
			require.NoError(t, err)
			require.Equal(t, Claimed, r.State, "key %d", i)
			require.NoError(t, s.Complete(ctx, key(i), r.Token, result, t0))
		}
	}
	state := func(t *testing.T, s *MemoryStore, i int) State {
		r, err := s.Claim(ctx, key(i), "h", t0, lt)
		require.NoError(t, err)
		if r.State == Claimed {
			require.NoError(t, s.Release(ctx, key(i), r.Token))
		}
		return r.State
	}

	t.Run("keys", func(t *testing.T) {
		t.Parallel()
		s := NewMemoryStore(MemoryMaxKeys(3))
		running, err := s.Claim(ctx, Key{Subject: "alice", Tool: "t", ID: "running"}, "h", t0, lt)
		require.NoError(t, err)
		fill(t, s, 0, 5, []byte(`"r"`))
		require.Equal(t, []State{Claimed, Claimed, Completed, Completed, Completed},
			[]State{state(t, s, 0), state(t, s, 1), state(t, s, 2), state(t, s, 3), state(t, s, 4)}, "the two oldest were dropped")
		r, err := s.Claim(ctx, Key{Subject: "alice", Tool: "t", ID: "running"}, "h", t0, lt)
		require.NoError(t, err)
		require.Equal(t, Running, r.State, "a running claim is never dropped")
		require.NoError(t, s.Complete(ctx, Key{Subject: "alice", Tool: "t", ID: "running"}, running.Token, nil, t0))
	})
	t.Run("bytes", func(t *testing.T) {
		t.Parallel()
		s := NewMemoryStore(MemoryMaxBytes(25))
		fill(t, s, 0, 4, bytes.Repeat([]byte("x"), 10))
		require.Equal(t, []State{Claimed, Claimed, Completed, Completed},
			[]State{state(t, s, 0), state(t, s, 1), state(t, s, 2), state(t, s, 3)})
		fill(t, s, 4, 5, bytes.Repeat([]byte("x"), 100))
		require.Equal(t, []State{Claimed, Claimed, Completed},
			[]State{state(t, s, 2), state(t, s, 3), state(t, s, 4)}, "a result over the cap stays, alone")
	})
	t.Run("60 results of 3 MB stay under the default cap", func(t *testing.T) {
		t.Parallel()
		s := NewMemoryStore()
		fill(t, s, 0, 60, bytes.Repeat([]byte("x"), 3<<20))
		s.mu.Lock()
		kept, size := s.done.Len(), s.bytes
		s.mu.Unlock()
		require.LessOrEqual(t, size, DefaultMemoryMaxBytes)
		require.Equal(t, DefaultMemoryMaxBytes/(3<<20), kept)
	})
}

// TestSQLiteFilesReadableByOwnerOnly: a new SQLite file, and the -wal and -shm files
// SQLite adds beside it, are readable by their owner only; an existing
// file's mode is not changed.
func TestSQLiteFilesReadableByOwnerOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	k := Key{Subject: "alice", Tool: "t", ID: "k"}
	r, err := s.Claim(ctx, k, "h", t0, Lifetimes{})
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, k, r.Token, []byte(`"secret result"`), t0))
	// WAL mode: while the store is open, SQLite keeps -wal and -shm files.
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
	require.NoError(t, s.Close())

	shared := filepath.Join(dir, "shared.db")
	require.NoError(t, os.WriteFile(shared, nil, 0o640))
	require.NoError(t, os.Chmod(shared, 0o640)) // whatever the umask
	s, err = OpenSQLite(shared)
	require.NoError(t, err)
	_, err = s.Claim(ctx, k, "h", t0, Lifetimes{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	fi, err := os.Stat(shared)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "an existing file keeps its mode")
}

// failingPruneStore fails every Prune run, and says so on pruned.
type failingPruneStore struct {
	Store
	pruned chan struct{}
}

func (s failingPruneStore) Prune(context.Context, time.Time, Lifetimes, int) (int, error) {
	select {
	case s.pruned <- struct{}{}:
	default:
	}
	return 0, errors.New("disk on fire")
}

// notifyingStore says on pruned each time a Prune run returns.
type notifyingStore struct {
	Store
	pruned chan int
}

func (s notifyingStore) Prune(ctx context.Context, now time.Time, lt Lifetimes, limit int) (int, error) {
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
		l := New(NewMemoryStore(), Options{Retention: retention, Now: func() time.Time { return now }})
		var c counter
		hooks := []mcpadapter.Hook{l.Hook()}
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
		l := New(NewMemoryStore(), Options{})
		require.Equal(t, 24*time.Hour, l.opts.Retention)
		require.Equal(t, DefaultPruneBatch, l.opts.PruneBatch)
		require.Equal(t, DefaultLease, l.opts.Lease)
		require.Equal(t, DefaultMetaKey, l.opts.MetaKey)
	})

	t.Run("RunPruner logs a failed run, and an interval of 0 is the default", func(t *testing.T) {
		store := failingPruneStore{Store: NewMemoryStore(), pruned: make(chan struct{}, 1)}
		var log bytes.Buffer
		l := New(store, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.RunPruner(ctx, 0) }()
		<-store.pruned // the first run is at once; the next one is a tick away
		cancel()
		<-done
		require.Equal(t, 1, strings.Count(log.String(), "ledger: pruning expired keys failed"), "log:\n%s", log.String())
		require.Contains(t, log.String(), `error="disk on fire"`, "the store's error is kept for the operator")
	})

	t.Run("Prune and RunPruner", func(t *testing.T) {
		mem := NewMemoryStore()
		store := notifyingStore{Store: mem, pruned: make(chan int, 16)}
		l := New(store, Options{Retention: retention, PruneBatch: 2, Now: clock})
		var c counter
		for i := range 3 {
			run(t, []mcpadapter.Hook{l.Hook()}, newCall("alice", keyMeta(fmt.Sprint(i)), args), c.method)
		}
		n, err := l.Prune(context.Background())
		require.NoError(t, err)
		require.Zero(t, n, "nothing expired yet")
		<-store.pruned
		require.Equal(t, 3, mem.claims(t))

		ctx, cancel := context.WithCancel(context.Background())
		l.opts.Now = func() time.Time { return t0.Add(retention + time.Second) }
		done := make(chan struct{})
		go func() { defer close(done); l.RunPruner(ctx, time.Hour) }()
		// A full batch, then at once the rest: no tick needed.
		require.Equal(t, 2, <-store.pruned)
		require.Equal(t, 1, <-store.pruned)
		cancel()
		<-done
		require.Zero(t, mem.claims(t))
	})
}
