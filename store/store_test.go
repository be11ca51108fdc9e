package store

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeKinds opens a fresh store of each kind: memory, an SQLite file of
// its own, PostgreSQL on a schema of its own (isolatedPostgres), so that a
// test may count and prune every row of its store.
var storeKinds = []struct {
	name string
	// open returns a store and, for stores a second process could share, a
	// function opening a second handle on the same data.
	open func(t *testing.T) (Store, func() Store)
}{
	{"memory", func(t *testing.T) (Store, func() Store) {
		s := NewMemoryStore()
		return s, func() Store { return s }
	}},
	{"sqlite", func(t *testing.T) (Store, func() Store) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		open := func() Store {
			s, err := OpenSQLite(path)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open(), open
	}},
	{"postgres", func(t *testing.T) (Store, func() Store) {
		open := isolatedPostgres(t)
		return open(), func() Store { return open() }
	}},
}

func uniqueKey(t *testing.T) Key {
	return Key{Subject: "alice/" + newToken(), Tool: "getReward", ID: "k-1"}
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

const lease = time.Minute

// lts are the lifetimes the store tests claim with: the default retention.
var lts = Lifetimes{Lease: lease}

func TestStoreConformance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, s Store, k Key)
	}{
		{"claim, complete, replay", func(t *testing.T, s Store, k Key) {
			r, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			require.Equal(t, Claimed, r.State)
			require.NotEmpty(t, r.Token)
			again, err := s.Claim(ctx, k, "h1", t0.Add(time.Second), lts)
			require.NoError(t, err)
			require.Equal(t, ClaimResult{State: Running}, again)
			require.NoError(t, s.Complete(ctx, k, r.Token, []byte(`{"content":[]}`), t0))
			for range 2 {
				replay, err := s.Claim(ctx, k, "h1", t0.Add(time.Hour), lts)
				require.NoError(t, err)
				require.Equal(t, ClaimResult{State: Completed, Result: []byte(`{"content":[]}`)}, replay)
			}
			require.ErrorIs(t, s.Complete(ctx, k, r.Token, []byte(`{}`), t0), ErrClaimLost, "completes once")
			require.ErrorIs(t, s.Release(ctx, k, r.Token), ErrClaimLost, "a completed key is never released")
		}},
		{"different arguments conflict, running or completed", func(t *testing.T, s Store, k Key) {
			r, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			c, err := s.Claim(ctx, k, "h2", t0, lts)
			require.NoError(t, err)
			require.Equal(t, ClaimResult{State: Conflict}, c)
			c, err = s.Claim(ctx, k, "h2", t0.Add(2*lease), lts)
			require.NoError(t, err)
			require.Equal(t, Conflict, c.State, "an expired claim is not taken over with other arguments")
			require.NoError(t, s.Complete(ctx, k, r.Token, []byte(`"r"`), t0))
			c, err = s.Claim(ctx, k, "h2", t0, lts)
			require.NoError(t, err)
			require.Equal(t, ClaimResult{State: Conflict}, c)
		}},
		{"running until the lease ends", func(t *testing.T, s Store, k Key) {
			_, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			r, err := s.Claim(ctx, k, "h1", t0.Add(lease), lts)
			require.NoError(t, err)
			require.Equal(t, Running, r.State, "a claim exactly as old as its lease still holds")
		}},
		{"zero lifetimes are the defaults", func(t *testing.T, s Store, k Key) {
			_, err := s.Claim(ctx, k, "h1", t0, Lifetimes{})
			require.NoError(t, err)
			r, err := s.Claim(ctx, k, "h1", t0.Add(DefaultLease), Lifetimes{})
			require.NoError(t, err)
			require.Equal(t, Running, r.State, "a zero lease is DefaultLease")
			r, err = s.Claim(ctx, k, "h1", t0.Add(DefaultLease+time.Second), Lifetimes{})
			require.NoError(t, err)
			require.Equal(t, Claimed, r.State, "and it ends")
		}},
		{"release after a failure frees the key", func(t *testing.T, s Store, k Key) {
			r, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, k, r.Token))
			require.ErrorIs(t, s.Release(ctx, k, r.Token), ErrClaimLost)
			r2, err := s.Claim(ctx, k, "h2", t0, lts)
			require.NoError(t, err)
			require.Equal(t, Claimed, r2.State, "released: other arguments may claim it")
			require.NotEqual(t, r.Token, r2.Token)
			require.ErrorIs(t, s.Complete(ctx, k, r.Token, nil, t0), ErrClaimLost)
		}},
		{"lease takeover; the old owner cannot complete or release", func(t *testing.T, s Store, k Key) {
			old, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			now := t0.Add(lease + time.Nanosecond)
			taken, err := s.Claim(ctx, k, "h1", now, lts)
			require.NoError(t, err)
			require.Equal(t, Claimed, taken.State)
			require.NotEqual(t, old.Token, taken.Token)
			r, err := s.Claim(ctx, k, "h1", now.Add(time.Second), lts)
			require.NoError(t, err)
			require.Equal(t, Running, r.State, "the takeover starts a new lease")
			require.ErrorIs(t, s.Complete(ctx, k, old.Token, []byte(`"old"`), t0), ErrClaimLost)
			require.ErrorIs(t, s.Release(ctx, k, old.Token), ErrClaimLost)
			require.NoError(t, s.Complete(ctx, k, taken.Token, []byte(`"new"`), t0))
			r, err = s.Claim(ctx, k, "h1", now, lts)
			require.NoError(t, err)
			require.Equal(t, ClaimResult{State: Completed, Result: []byte(`"new"`)}, r)
		}},
		{"a token never claimed holds nothing", func(t *testing.T, s Store, k Key) {
			require.ErrorIs(t, s.Complete(ctx, k, "nobody", []byte(`1`), t0), ErrClaimLost)
			require.ErrorIs(t, s.Release(ctx, k, "nobody"), ErrClaimLost)
			r, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			require.ErrorIs(t, s.Complete(ctx, k, "nobody", []byte(`1`), t0), ErrClaimLost)
			require.NoError(t, s.Complete(ctx, k, r.Token, []byte(`1`), t0))
		}},
		{"subject, tool and key scope a claim", func(t *testing.T, s Store, k Key) {
			_, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			for _, other := range []Key{
				{Subject: k.Subject + "x", Tool: k.Tool, ID: k.ID},
				{Subject: k.Subject, Tool: k.Tool + "x", ID: k.ID},
				{Subject: k.Subject, Tool: k.Tool, ID: k.ID + "x"},
			} {
				r, err := s.Claim(ctx, other, "h2", t0, lts)
				require.NoError(t, err)
				require.Equal(t, Claimed, r.State, "%+v", other)
			}
		}},
		{"a key completed for one tool is free for another", func(t *testing.T, s Store, k Key) {
			r, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, k, r.Token, []byte(`"A"`), t0))
			other := Key{Subject: k.Subject, Tool: k.Tool + "-other", ID: k.ID}
			o, err := s.Claim(ctx, other, "h1", t0, lts)
			require.NoError(t, err)
			require.Equal(t, Claimed, o.State, "tool B with tool A's key and arguments claims its own key")
			require.NoError(t, s.Complete(ctx, other, o.Token, []byte(`"B"`), t0))
			for key, want := range map[Key]string{k: `"A"`, other: `"B"`} {
				c, err := s.Claim(ctx, key, "h1", t0, lts)
				require.NoError(t, err)
				require.Equal(t, ClaimResult{State: Completed, Result: []byte(want)}, c, key.Tool)
			}
		}},
		{"an empty result round-trips", func(t *testing.T, s Store, k Key) {
			r, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, k, r.Token, nil, t0))
			c, err := s.Claim(ctx, k, "h1", t0, lts)
			require.NoError(t, err)
			require.Equal(t, Completed, c.State)
			require.Empty(t, c.Result)
		}},
		{"concurrent claims: exactly one wins, fresh and after the lease", func(t *testing.T, s Store, k Key) {
			for _, now := range []time.Time{t0, t0.Add(2 * lease)} {
				var won atomic.Int32
				var wg sync.WaitGroup
				for range 20 {
					wg.Go(func() {
						r, err := s.Claim(ctx, k, "h1", now, lts)
						if assert.NoError(t, err) && r.State == Claimed {
							won.Add(1)
						} else {
							assert.Equal(t, Running, r.State)
						}
					})
				}
				wg.Wait()
				require.EqualValues(t, 1, won.Load(), "at %v", now)
			}
		}},
	}
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					s, _ := kind.open(t)
					c.run(t, s, uniqueKey(t))
				})
			}
		})
	}
}

func TestSQLiteSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	k := Key{Subject: "alice", Tool: "getReward", ID: "k-1"}
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	r, err := s.Claim(ctx, k, "h1", t0, lts)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, k, r.Token, []byte(`"done"`), t0))
	require.NoError(t, s.Close())

	s, err = OpenSQLite(path)
	require.NoError(t, err)
	defer s.Close()
	c, err := s.Claim(ctx, k, "h1", t0.Add(24*time.Hour), lts)
	require.NoError(t, err)
	require.Equal(t, ClaimResult{State: Completed, Result: []byte(`"done"`)}, c)
}

func TestOpenStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenStore(ctx, "memory")
	require.NoError(t, err)
	require.IsType(t, &MemoryStore{}, s)
	s, err = OpenStore(ctx, "sqlite:"+filepath.Join(t.TempDir(), "l.db"))
	require.NoError(t, err)
	require.IsType(t, &SQLiteStore{}, s)
	require.NoError(t, s.Close())
	for _, bad := range []string{"", "sqlite:", "redis://x", "sqlite:a?b"} {
		_, err := OpenStore(ctx, bad)
		require.Error(t, err, bad)
	}
}
