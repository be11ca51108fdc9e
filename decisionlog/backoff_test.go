package decisionlog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
)

// TestDefaultBackoff: 100ms before the first retry, doubling, at most 30s,
// each with up to 20% added.
func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	for attempt, base := range map[int]time.Duration{
		0: 100 * time.Millisecond, 1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		9: 25600 * time.Millisecond, 10: 30 * time.Second, 1 << 20: 30 * time.Second,
	} {
		for range 50 {
			d := decisionlog.DefaultBackoff(attempt)
			require.GreaterOrEqual(t, d, base, "attempt %d", attempt)
			require.LessOrEqual(t, d, base+base/5, "attempt %d", attempt)
		}
	}
}
