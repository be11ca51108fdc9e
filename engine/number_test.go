package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

// TestRevisionNumbersCountSwaps: the first revision is 1 and each swap
// installs the next number, never one used before.
func TestRevisionNumbersCountSwaps(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": grantEcho})
	e, err := engine.New(context.Background(), engine.Source{Registry: f.registry, Policies: f.policies}, engine.WithSettle(time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, uint64(1), e.Current().Number())
	for i, content := range []string{grantGetReward, grantEcho, grantGetReward} {
		f.write(f.pol("grant.rego"), content)
		changed, err := e.Reload(context.Background())
		require.NoError(t, err)
		require.True(t, changed, "rewrite %d", i)
		require.Equal(t, uint64(i+2), e.Current().Number(), "rewrite %d", i)
	}
}
