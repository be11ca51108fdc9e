package upstream

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/backoff"
)

// TestReconnectBackoff: 100ms after the first failure, doubling, at most 5s.
func TestReconnectBackoff(t *testing.T) {
	t.Parallel()
	for failures, want := range map[int]time.Duration{
		0: 100 * time.Millisecond, 1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		3: 400 * time.Millisecond, 6: 3200 * time.Millisecond, 7: 5 * time.Second,
		8: 5 * time.Second, 1 << 20: 5 * time.Second,
	} {
		require.Equal(t, want, backoff.Exponential(backoffMin, backoffMax, failures), "failures %d", failures)
	}
}
