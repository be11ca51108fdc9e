package approvals_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/store"
)

// TestRetentionAndStates: state changes are counted (the metric's
// callback); an expired request is kept for the retention, then pruned
// (its id is then unknown: 404), for every store.
func TestRetentionAndStates(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.ApprovalStore) {
		var mu sync.Mutex
		states := map[string]int{}
		e := newEnvOptions(t, st, testPolicy, approvals.Options{Retention: time.Hour, OnState: func(s string) {
			mu.Lock()
			defer mu.Unlock()
			states[s]++
		}})
		as := e.connect(t, alice, nil)
		approved := hold(t, as, "a")
		refused := hold(t, as, "b")
		expired := hold(t, as, "c")
		code, _ := e.do(t, bob, "POST", "/approvals/"+approved+"/approve", "")
		require.Equal(t, http.StatusOK, code)
		code, _ = e.do(t, bob, "POST", "/approvals/"+refused+"/refuse", "")
		require.Equal(t, http.StatusOK, code)
		text, _ := call(t, as, "wipe", "a")
		require.Equal(t, "ran a", text)
		e.clock.Advance(11 * time.Minute)
		require.NotEqual(t, expired, hold(t, as, "c")) // finds c expired, opens a new one

		mu.Lock()
		assert.Equal(t, map[string]int{"requested": 4, "approved": 1, "refused": 1, "consumed": 1, "expired": 1}, states)
		mu.Unlock()

		// Within the retention the expired request is known (409), after it gone (404).
		code, _ = e.do(t, bob, "POST", "/approvals/"+expired+"/approve", "")
		assert.Equal(t, http.StatusConflict, code)
		e.clock.Advance(time.Hour)
		n, err := e.gate.Prune(context.Background(), 100)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, n, 3)
		code, _ = e.do(t, bob, "POST", "/approvals/"+expired+"/approve", "")
		assert.Equal(t, http.StatusNotFound, code)
	})
}
