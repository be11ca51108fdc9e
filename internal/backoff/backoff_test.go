package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/backoff"
)

func TestExponential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		first, ceiling time.Duration
		n              int
		want           time.Duration
	}{
		{time.Second, time.Minute, -1, time.Second},
		{time.Second, time.Minute, 0, time.Second},
		{time.Second, time.Minute, 1, time.Second},
		{time.Second, time.Minute, 2, 2 * time.Second},
		{time.Second, time.Minute, 6, 32 * time.Second},
		{time.Second, time.Minute, 7, time.Minute},
		{time.Second, time.Minute, math.MaxInt, time.Minute},
		{3 * time.Second, 2 * time.Second, 1, 2 * time.Second},
		{time.Nanosecond, time.Duration(math.MaxInt64), math.MaxInt, time.Duration(math.MaxInt64)},
		{time.Nanosecond, time.Duration(math.MaxInt64), 64, time.Duration(math.MaxInt64)},
		{time.Nanosecond, time.Duration(math.MaxInt64), 63, 1 << 62},
		{0, time.Second, math.MaxInt, 0},
		{-time.Second, time.Second, math.MaxInt, -time.Second},
	} {
		require.Equal(t, tc.want, backoff.Exponential(tc.first, tc.ceiling, tc.n), "%v %v %d", tc.first, tc.ceiling, tc.n)
	}
}
