package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistory (docs/contract.md §20): a caller's entries come back newest
// first, within the window, at most max; another caller's (another
// subject, or the same subject of another source) never; a second handle
// (another process) sees them; the cap per caller drops the oldest;
// pruning removes entries whose window passed.
func TestHistory(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			s1, again := kind.open(t)
			hs := s1.(HistoryStore)
			ctx := context.Background()
			alice := HistoryKey{Source: "tokens", Subject: "alice/" + newToken()}
			for i := range 5 {
				e := HistoryEntry{Tool: "read", At: t0.Add(time.Duration(i) * time.Minute), Outcome: "result", Arguments: []byte(`{"id":` + string(rune('0'+i)) + `}`)}
				require.NoError(t, hs.AppendHistory(ctx, alice, e, time.Hour, 4))
			}
			require.NoError(t, hs.AppendHistory(ctx, HistoryKey{Source: "jwt", Subject: alice.Subject}, HistoryEntry{Tool: "other", At: t0, Outcome: "denied", Arguments: []byte(`{}`)}, time.Hour, 4))
			other := again().(HistoryStore)
			got, err := other.ReadHistory(ctx, alice, t0.Add(90*time.Second), 10)
			require.NoError(t, err)
			require.Len(t, got, 3, "entries after the window's start")
			assert.Equal(t, t0.Add(4*time.Minute), got[0].At.UTC())
			assert.Equal(t, `{"id":4}`, string(got[0].Arguments))
			assert.Equal(t, "read", got[0].Tool)
			assert.Equal(t, "result", got[0].Outcome)
			got, err = other.ReadHistory(ctx, alice, t0.Add(-time.Hour), 2)
			require.NoError(t, err)
			require.Len(t, got, 2, "at most max")
			assert.Equal(t, `{"id":3}`, string(got[1].Arguments))
			got, err = other.ReadHistory(ctx, alice, t0.Add(-time.Hour), 10)
			require.NoError(t, err)
			assert.Len(t, got, 4, "the cap dropped the oldest")
			got, err = hs.ReadHistory(ctx, HistoryKey{Source: "tokens", Subject: "bob"}, t0.Add(-time.Hour), 10)
			require.NoError(t, err)
			assert.Empty(t, got)
			n, err := hs.PruneHistory(ctx, t0.Add(time.Hour+150*time.Second), 100)
			require.NoError(t, err)
			assert.Equal(t, 3, n, "alice's entries at +1m and +2m and the other source's")
			got, err = hs.ReadHistory(ctx, alice, t0.Add(-time.Hour), 10)
			require.NoError(t, err)
			assert.Len(t, got, 2)
		})
	}
}

// TestHistoryReadSortsNothing: SQLite reads a caller's entries and drops
// those past the cap along the caller's index, in its order: neither
// sorts the caller's entries (a read on every call of a policy that reads
// input.history).
func TestHistoryReadSortsNothing(t *testing.T) {
	t.Parallel()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	for q, args := range map[string][]any{readHistoryQuery: {"k", 0, 10}, capHistoryQuery: {"k", 10}} {
		rows, err := s.db.(sqliteDB).db.Query("EXPLAIN QUERY PLAN "+rebind(q), args...)
		require.NoError(t, err)
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		steps := strings.Join(plan, "\n")
		assert.NotContains(t, steps, "TEMP B-TREE", q)
		assert.Contains(t, steps, "INDEX toolgate_history_caller_at (caller=?", q)
	}
}
