package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// TestLimiter: the Limiter reads engine limits, answers each limit's state
// in order, and fails closed when the store cannot answer.
func TestLimiter(t *testing.T) {
	t.Parallel()
	now := t0
	l := NewLimiter(store.NewMemoryStore(), func() time.Time { return now })
	ctx := context.Background()
	lims := []toolcall.Limit{{Key: "a", Max: 1, Per: time.Minute, Reason: "one a minute"}}
	ck, err := l.Admit(ctx, lims)
	require.NoError(t, err)
	assert.True(t, ck.Admitted)
	ck, err = l.Peek(ctx, lims)
	require.NoError(t, err)
	assert.False(t, ck.Admitted)
	require.Len(t, ck.States, 1)
	assert.Equal(t, int64(1), ck.States[0].Count)
	assert.Equal(t, time.Minute, ck.States[0].Wait)
	now = now.Add(time.Minute)
	ck, err = l.Admit(ctx, lims)
	require.NoError(t, err)
	assert.True(t, ck.Admitted)

	closed, err := store.OpenSQLite(t.TempDir() + "/closed.db")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, err = NewLimiter(closed, nil).Admit(ctx, lims)
	assert.ErrorIs(t, err, ErrLimitStore)
}

// TestLedgerPrunerPrunesLimits: counted calls whose longest window ended
// are pruned by the ledger's pruner too, in every store.
func TestLedgerPrunerPrunesLimits(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := kind.open(t)
			long := store.LimitRequest{Key: "long/" + newToken(), Max: 100, Per: time.Hour}
			_, _, err := s.(store.LimitStore).AdmitCall(ctx, []store.LimitRequest{long}, t0)
			require.NoError(t, err)
			l := New(s, Options{Now: func() time.Time { return t0.Add(2 * time.Hour) }})
			n, err := l.Prune(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
		})
	}
}

// TestLimiterFailsClosedBeyondTheKeyCap: a memory store full of distinct
// limit keys fails a call that needs another one as a store failure
// (ErrLimitStore, answered as the internal error), while a call under a
// key it holds is decided as usual.
func TestLimiterFailsClosedBeyondTheKeyCap(t *testing.T) {
	t.Parallel()
	l := NewLimiter(store.NewMemoryStore(store.MemoryMaxLimitKeys(1)), func() time.Time { return t0 })
	ctx := context.Background()
	held := []toolcall.Limit{{Key: "getCustomer/1", Max: 5, Per: time.Minute, Reason: "r"}}
	ck, err := l.Admit(ctx, held)
	require.NoError(t, err)
	assert.True(t, ck.Admitted)
	_, err = l.Admit(ctx, []toolcall.Limit{{Key: "getCustomer/2", Max: 5, Per: time.Minute, Reason: "r"}})
	assert.ErrorIs(t, err, ErrLimitStore)
	assert.ErrorIs(t, err, store.ErrTooManyLimitKeys)
	ck, err = l.Admit(ctx, held)
	require.NoError(t, err)
	assert.True(t, ck.Admitted)
}
