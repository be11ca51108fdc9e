package store

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eachLimitStore runs test, in parallel, on a store of every kind as a
// LimitStore, with a function opening a second handle on the same data
// (another process's, for SQLite and PostgreSQL).
func eachLimitStore(t *testing.T, test func(t *testing.T, s LimitStore, again func() LimitStore)) {
	t.Helper()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			s, again := kind.open(t)
			ls, ok := s.(LimitStore)
			require.True(t, ok, "%T counts no limits", s)
			test(t, ls, func() LimitStore { return again().(LimitStore) })
		})
	}
}

// TestLimitsAdmitExactlyMaxUnderConcurrency (docs/contract.md §18): 50 concurrent
// calls against max 10 admit exactly 10, in each store, through two
// handles on it (SQLite and PostgreSQL: as two processes would).
func TestLimitsAdmitExactlyMaxUnderConcurrency(t *testing.T) {
	t.Parallel()
	eachLimitStore(t, func(t *testing.T, s1 LimitStore, again func() LimitStore) {
		s2 := again()
		lim := []LimitRequest{{Key: "subject:alice/" + newToken(), Max: 10, Per: time.Minute}}
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s := s1
				if i%2 == 1 {
					s = s2
				}
				ok, counts, err := s.AdmitCall(context.Background(), lim, t0.Add(time.Duration(i)*time.Millisecond))
				if !assert.NoError(t, err) {
					return
				}
				assert.Len(t, counts, 1)
				if ok {
					admitted.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		assert.Equal(t, int64(10), admitted.Load())
		ok, counts, err := s1.PeekLimits(context.Background(), lim, t0.Add(time.Second))
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, int64(10), counts[0].Count)
	})
}

// TestLimitsWindowSlides: a window slides. After max calls, the next is
// refused with the wait until the oldest leaves the window; once it has
// (the clock moved, no sleep), a call is admitted again; calls refused
// are not counted.
func TestLimitsWindowSlides(t *testing.T) {
	t.Parallel()
	eachLimitStore(t, func(t *testing.T, s LimitStore, _ func() LimitStore) {
		ctx := context.Background()
		lim := []LimitRequest{{Key: "k/" + newToken(), Max: 2, Per: time.Minute}}
		admit := func(at time.Time) (bool, LimitCount) {
			t.Helper()
			ok, counts, err := s.AdmitCall(ctx, lim, at)
			require.NoError(t, err)
			require.Len(t, counts, 1)
			return ok, counts[0]
		}
		ok, c := admit(t0)
		assert.True(t, ok)
		assert.Equal(t, LimitCount{}, c)
		ok, c = admit(t0.Add(20 * time.Second))
		assert.True(t, ok)
		assert.Equal(t, LimitCount{Count: 1, Used: 1}, c)
		for range 3 { // refused calls are not counted
			ok, c = admit(t0.Add(30 * time.Second))
			assert.False(t, ok)
			assert.Equal(t, LimitCount{Count: 2, Used: 2, Wait: 30 * time.Second}, c)
		}
		// The first call leaves the window at t0+1m exactly: a window is
		// the last Per, the call at its start is out.
		ok, c = admit(t0.Add(time.Minute))
		assert.True(t, ok, "the window slid past the first call")
		assert.Equal(t, LimitCount{Count: 1, Used: 1}, c)
		ok, c = admit(t0.Add(time.Minute + time.Second))
		assert.False(t, ok)
		assert.Equal(t, LimitCount{Count: 2, Used: 2, Wait: 19 * time.Second}, c, "until the call at t0+20s leaves")
	})
}

// TestLimitsAreAllOrNothing: a call under two limits is counted under
// neither when one refuses it; one key shared by two limits counts a call
// once.
func TestLimitsAreAllOrNothing(t *testing.T) {
	t.Parallel()
	eachLimitStore(t, func(t *testing.T, s LimitStore, _ func() LimitStore) {
		ctx := context.Background()
		tag := newToken()
		subject := LimitRequest{Key: "subject/" + tag, Max: 5, Per: time.Hour}
		tool := LimitRequest{Key: "tool/" + tag, Max: 1, Per: time.Hour}
		ok, _, err := s.AdmitCall(ctx, []LimitRequest{subject, tool}, t0)
		require.NoError(t, err)
		require.True(t, ok)
		ok, counts, err := s.AdmitCall(ctx, []LimitRequest{subject, tool}, t0.Add(time.Second))
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, []LimitCount{{Count: 1, Used: 1}, {Count: 1, Used: 1, Wait: time.Hour - time.Second}}, counts)
		_, counts, err = s.PeekLimits(ctx, []LimitRequest{subject}, t0.Add(2*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(1), counts[0].Count, "the refused call was not counted under the subject")

		// One key, a rate and a quota: counted once.
		burst := LimitRequest{Key: "shared/" + tag, Max: 2, Per: time.Second}
		daily := LimitRequest{Key: burst.Key, Max: 3, Per: 24 * time.Hour}
		for i, want := range []bool{true, true, false} {
			ok, _, err := s.AdmitCall(ctx, []LimitRequest{burst, daily}, t0.Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, err)
			assert.Equal(t, want, ok, "call %d", i)
		}
		ok, counts, err = s.AdmitCall(ctx, []LimitRequest{burst, daily}, t0.Add(2*time.Second))
		require.NoError(t, err)
		assert.True(t, ok, "the burst window slid; the quota has room for one more")
		assert.Equal(t, []LimitCount{{Count: 0, Used: 0}, {Count: 2, Used: 2}}, counts)
		ok, counts, err = s.AdmitCall(ctx, []LimitRequest{burst, daily}, t0.Add(3*time.Second))
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, LimitCount{Count: 3, Used: 3, Wait: 24*time.Hour - 3*time.Second}, counts[1])
	})
}

// TestLimitsLongKeys: a key of any length counts (a policy may build keys
// from argument values); keys that share a long prefix stay apart.
func TestLimitsLongKeys(t *testing.T) {
	t.Parallel()
	eachLimitStore(t, func(t *testing.T, s LimitStore, _ func() LimitStore) {
		ctx := context.Background()
		long := strings.Repeat("k", 10_000) + newToken()
		a := LimitRequest{Key: long + "a", Max: 1, Per: time.Minute}
		b := LimitRequest{Key: long + "b", Max: 1, Per: time.Minute}
		ok, _, err := s.AdmitCall(ctx, []LimitRequest{a}, t0)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, counts, err := s.AdmitCall(ctx, []LimitRequest{a}, t0)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, LimitCount{Count: 1, Used: 1, Wait: time.Minute}, counts[0])
		ok, _, err = s.AdmitCall(ctx, []LimitRequest{b}, t0)
		require.NoError(t, err)
		assert.True(t, ok, "another long key")
	})
}

// TestLimitsPrune: counted calls are pruned once their longest window
// ended, like ledger keys, in bounded batches; younger ones are kept and
// still count.
func TestLimitsPrune(t *testing.T) {
	t.Parallel()
	eachLimitStore(t, func(t *testing.T, s LimitStore, _ func() LimitStore) {
		ctx := context.Background()
		tag := newToken()
		short := LimitRequest{Key: "short/" + tag, Max: 100, Per: time.Minute}
		long := LimitRequest{Key: "long/" + tag, Max: 100, Per: time.Hour}
		for i := range 3 {
			_, _, err := s.AdmitCall(ctx, []LimitRequest{short}, t0.Add(time.Duration(i)*time.Second))
			require.NoError(t, err)
		}
		_, _, err := s.AdmitCall(ctx, []LimitRequest{long}, t0)
		require.NoError(t, err)
		n, err := s.PruneLimits(ctx, t0.Add(2*time.Minute), 2)
		require.NoError(t, err)
		assert.Equal(t, 2, n, "a batch")
		n, err = s.PruneLimits(ctx, t0.Add(2*time.Minute), 100)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "the rest of the short window's calls; the hour's call stays")
		_, counts, err := s.PeekLimits(ctx, []LimitRequest{long}, t0.Add(2*time.Minute))
		require.NoError(t, err)
		assert.Equal(t, int64(1), counts[0].Count)

	})
}

// TestLimitsBudgets (docs/contract.md §20): a limit with costs admits a
// call while the costs within the window plus its own stay within max —
// exactly at the sum, not above — and refuses with the wait until enough
// cost has left the window; a cost above max never fits; concurrent
// calls through two handles never overspend.
func TestLimitsBudgets(t *testing.T) {
	t.Parallel()
	eachLimitStore(t, func(t *testing.T, s LimitStore, again func() LimitStore) {
		ctx := context.Background()
		key := "refunds/alice/" + newToken()
		lim := func(cost float64) []LimitRequest {
			return []LimitRequest{{Key: key, Max: 500, Per: 24 * time.Hour, Cost: cost}}
		}
		admit := func(cost float64, at time.Duration) (bool, LimitCount) {
			t.Helper()
			ok, counts, err := s.AdmitCall(ctx, lim(cost), t0.Add(at))
			require.NoError(t, err)
			require.Len(t, counts, 1)
			return ok, counts[0]
		}
		ok, _ := admit(200, 0)
		assert.True(t, ok)
		ok, c := admit(250.5, time.Hour)
		assert.True(t, ok)
		assert.Equal(t, LimitCount{Count: 1, Used: 200}, c)
		ok, c = admit(49.5, 2*time.Hour)
		assert.True(t, ok, "exactly at the sum")
		assert.Equal(t, LimitCount{Count: 2, Used: 450.5}, c)
		ok, c = admit(0.25, 3*time.Hour)
		assert.False(t, ok, "above the sum")
		assert.Equal(t, LimitCount{Count: 3, Used: 500, Wait: 21 * time.Hour}, c, "until the first 200 leaves")
		ok, c = admit(300, 3*time.Hour)
		assert.False(t, ok)
		assert.Equal(t, LimitCount{Count: 3, Used: 500, Wait: 22 * time.Hour}, c, "until the first two leave")
		ok, c = admit(501, 3*time.Hour)
		assert.False(t, ok)
		assert.Equal(t, LimitCount{Count: 3, Used: 500, Never: true}, c, "a cost above max never fits")
		ok, c = admit(200, 24*time.Hour)
		assert.True(t, ok, "the first 200 left the window")
		assert.Equal(t, LimitCount{Count: 2, Used: 300}, c)

		// Decimal fractions add up as written.
		dec := []LimitRequest{{Key: "dec/" + newToken(), Max: 0.3, Per: time.Hour, Cost: 0.1}}
		for i, want := range []bool{true, true, true, false} {
			ok, _, err := s.AdmitCall(ctx, dec, t0.Add(time.Duration(i)*time.Second))
			require.NoError(t, err)
			assert.Equal(t, want, ok, "0.1 number %d under 0.3", i+1)
		}

		// Concurrency: 40 calls of 3 under a budget of 100 admit 33.
		s2 := again()
		conc := []LimitRequest{{Key: "conc/" + newToken(), Max: 100, Per: time.Minute, Cost: 3}}
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := s
				if i%2 == 1 {
					st = s2
				}
				ok, _, err := st.AdmitCall(ctx, conc, t0.Add(time.Duration(i)*time.Millisecond))
				if assert.NoError(t, err) && ok {
					admitted.Add(1)
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, int64(33), admitted.Load())
	})
}

// TestLimitsMemoryHoldsLongKeysHashed: a MemoryStore keeps a key longer
// than maxStoredKey as its hash, as the SQL stores do: a key built from a
// large argument costs the store a bounded number of bytes, and the long
// key still counts under its own name.
func TestLimitsMemoryHoldsLongKeysHashed(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore()
	ctx := context.Background()
	long := "getCustomer/" + strings.Repeat("x", 1<<20)
	lim := []LimitRequest{{Key: long, Max: 1, Per: time.Minute}}
	ok, _, err := s.AdmitCall(ctx, lim, t0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, counts, err := s.PeekLimits(ctx, lim, t0.Add(time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "the long key counted")
	assert.Equal(t, int64(1), counts[0].Count)

	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.lim.keys, 1)
	for k := range s.lim.keys {
		assert.True(t, len(k) <= maxStoredKey, "a key of %d bytes is held", len(k))
		assert.True(t, k == storedKey(long), "the key is held as its hash")
	}
}

// TestLimitsMemoryCapsDistinctKeys: a MemoryStore counts under at most
// MemoryMaxLimitKeys distinct keys; a call needing one more fails with
// ErrTooManyLimitKeys and is counted under none of its keys (all or
// nothing), while calls under keys it holds still count. Once the windows
// of held keys ended, their room is free again.
func TestLimitsMemoryCapsDistinctKeys(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore(MemoryMaxLimitKeys(3))
	ctx := context.Background()
	lim := func(key string) LimitRequest { return LimitRequest{Key: key, Max: 10, Per: time.Minute} }
	for _, k := range []string{"a", "b", "c"} {
		ok, _, err := s.AdmitCall(ctx, []LimitRequest{lim(k)}, t0)
		require.NoError(t, err, k)
		require.True(t, ok, k)
	}
	ok, _, err := s.AdmitCall(ctx, []LimitRequest{lim("a"), lim("d")}, t0.Add(time.Second))
	require.ErrorIs(t, err, ErrTooManyLimitKeys)
	assert.False(t, ok)
	_, counts, err := s.PeekLimits(ctx, []LimitRequest{lim("a"), lim("d")}, t0.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, int64(1), counts[0].Count, "the failed call was not counted under a")
	assert.Equal(t, int64(0), counts[1].Count)

	ok, _, err = s.AdmitCall(ctx, []LimitRequest{lim("a")}, t0.Add(time.Second))
	require.NoError(t, err, "a held key still counts")
	assert.True(t, ok)

	// b and c left their windows at t0+1m (a's second call is younger).
	ok, _, err = s.AdmitCall(ctx, []LimitRequest{lim("d"), lim("e")}, t0.Add(time.Minute+time.Second))
	require.NoError(t, err, "room was freed by the ended windows")
	assert.True(t, ok)
	ok, _, err = s.AdmitCall(ctx, []LimitRequest{lim("f")}, t0.Add(time.Minute+time.Second))
	require.ErrorIs(t, err, ErrTooManyLimitKeys, "a, d and e are live")
	assert.False(t, ok)
}

// BenchmarkLimitsMemoryLongKeys reports what a MemoryStore holds per
// distinct limit key built from a 64 KiB argument (heap bytes per key,
// after a collection, over 500 keys a run): a bounded number, not the
// key's size.
func BenchmarkLimitsMemoryLongKeys(b *testing.B) {
	const keys = 500
	ctx := context.Background()
	arg := strings.Repeat("x", 64<<10)
	var held float64
	for range b.N {
		s := NewMemoryStore()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keys {
			// Each key is built for its call, as a policy builds it: what
			// stays reachable after the loop is what the store keeps.
			key := fmt.Sprintf("getCustomer/%d/%s", i, arg)
			ok, _, err := s.AdmitCall(ctx, []LimitRequest{{Key: key, Max: 1, Per: time.Hour}}, t0)
			if err != nil || !ok {
				b.Fatalf("call %d: admitted %v, %v", i, ok, err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(s)
	}
	b.ReportMetric(held/float64(b.N*keys), "heap-B/key")
}
