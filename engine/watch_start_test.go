package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/watch"
)

// watchFrom runs Watch on e until the test ends.
func watchFrom(t *testing.T, e *engine.Engine, wo watch.Options) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch.Run(ctx, e, wo) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// Watch's first attempt, made to catch up with changes made before its
// watches were set up, builds nothing when the files are those the
// serving revision was built from.
func TestWatchOnAnUnchangedTreeBuildsNothing(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport})
	e, err := engine.New(context.Background(), engine.Source{Registry: f.registry, Policies: f.policies})
	require.NoError(t, err)
	first := e.Current()
	watchFrom(t, e, watch.Options{Settle: time.Millisecond})
	require.Eventually(t, func() bool { attempts, _ := e.ReloadCounts(); return attempts > 0 }, failureBound, time.Millisecond,
		"Watch never tried its first reload")
	_, builds := e.ReloadCounts()
	require.Zero(t, builds, "the unchanged tree was compiled again")
	require.Same(t, first, e.Current())
	st := e.Status()
	require.EqualValues(t, 1, st.Revision)
	require.Zero(t, st.Reloads)
	require.Empty(t, st.LastError)

	// A host's Reload on the unchanged tree builds nothing either.
	changed, err := e.Reload(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	_, builds = e.ReloadCounts()
	require.Zero(t, builds)
}

// What changed between New and Watch is still picked up by the first
// attempt: the reason it is made.
func TestWatchPicksUpAChangeMadeBeforeIt(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport})
	e, err := engine.New(context.Background(), engine.Source{Registry: f.registry, Policies: f.policies})
	require.NoError(t, err)
	f.e = e
	require.Equal(t, allButReport, f.granted())
	f.write(f.pol("grant.rego"), grantEcho) // before Watch has any watch
	watchFrom(t, e, watch.Options{Settle: time.Millisecond})
	f.waitGranted(onlyEcho)
	st := e.Status()
	require.EqualValues(t, 2, st.Revision)
	require.EqualValues(t, 1, st.Reloads)
	_, builds := e.ReloadCounts()
	require.EqualValues(t, 1, builds)
}
