package approvals_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/store"
)

// TestStoreCompareAndSwap pins the atomic steps the gate is built from, for
// every store: one live request per key, and of concurrent transitions
// from one status exactly one wins.
func TestStoreCompareAndSwap(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.ApprovalStore) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		key := store.ApprovalKey{Subject: "alice", Tool: "wipe", ArgsHash: "h"}
		rec := store.ApprovalRecord{ID: "r1", Key: key, Arguments: []byte(`{"a":1}`), Reason: "r", Approvers: []string{"admin"},
			TTL: time.Hour, Status: store.ApprovalPending, Created: now, Expires: now.Add(time.Hour)}
		ok, err := st.CreateApproval(ctx, rec)
		require.NoError(t, err)
		require.True(t, ok)
		dup := rec
		dup.ID = "r2"
		ok, err = st.CreateApproval(ctx, dup)
		require.NoError(t, err)
		require.False(t, ok, "one live request per key")

		got, err := st.LiveApproval(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, "r1", got.ID)
		assert.JSONEq(t, `{"a":1}`, string(got.Arguments))
		assert.Equal(t, []string{"admin"}, got.Approvers)
		assert.True(t, got.Expires.Equal(now.Add(time.Hour)))

		approved := got
		approved.Status, approved.DecidedBy, approved.DecidedAt = store.ApprovalApproved, "bob", now
		ok, err = st.TransitionApproval(ctx, store.ApprovalPending, approved)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = st.TransitionApproval(ctx, store.ApprovalPending, approved)
		require.NoError(t, err)
		require.False(t, ok, "no longer pending")

		const n = 20
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		consumed := approved
		consumed.Status = store.ApprovalConsumed
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if ok, err := st.TransitionApproval(ctx, store.ApprovalApproved, consumed); err == nil && ok {
					wins.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		assert.EqualValues(t, 1, wins.Load(), "an approval is consumed once")

		_, err = st.LiveApproval(ctx, key)
		require.ErrorIs(t, err, store.ErrApprovalNotFound, "a consumed request frees its key")
		ok, err = st.CreateApproval(ctx, dup)
		require.NoError(t, err)
		require.True(t, ok)
		byID, err := st.ApprovalByID(ctx, "r1")
		require.NoError(t, err)
		assert.Equal(t, store.ApprovalConsumed, byID.Status)
		assert.Equal(t, "bob", byID.DecidedBy)
		_, err = st.ApprovalByID(ctx, "nope")
		require.ErrorIs(t, err, store.ErrApprovalNotFound)
	})
}
