package engine_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/testclock"
	"github.com/toolgate/toolgate/watch"
)

// The prefix of a policy written in place in chunks: valid Rego on its own,
// and without the override it drops every hidden tool would show.
const grantPrefix = "package toolgate.grant\n"

// TestHalfWrittenPolicyNeverServed: a policy rewritten in place in two
// chunks, with a pause between them longer than the watch's debounce, is
// not loaded until it has kept its size and modification time for the
// settle window; the valid prefix alone is never served. The clock is
// fake: every reload attempt is made by the test, at the times it says.
func TestHalfWrittenPolicyNeverServed(t *testing.T) {
	t.Parallel()
	const settle = time.Hour // only the fake clock moves: no reload gets past it by accident
	clock := testclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport})
	e, err := engine.New(context.Background(), engine.Source{Registry: f.registry, Policies: f.policies},
		engine.WithSettle(settle), engine.WithClock(clock.Now))
	require.NoError(t, err)
	granted := func() []string { return e.Current().Grant(context.Background(), carol, listReq).Granted() }
	require.Equal(t, allButReport, granted())

	// Unchanged files reload at once: the window holds back changes only.
	changed, wait, err := e.ReloadOnce(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Zero(t, wait)

	file, err := os.OpenFile(f.pol("grant.rego"), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	defer file.Close()
	_, err = file.WriteString(grantPrefix)
	require.NoError(t, err)

	// The watch's debounce has passed (the pause of the finding): the
	// prefix is on disk, and a reload is attempted.
	clock.Advance(watch.DefaultDebounce + time.Millisecond)
	changed, wait, err = e.ReloadOnce(context.Background())
	require.NoError(t, err)
	require.False(t, changed, "the valid prefix was loaded")
	require.Equal(t, settle, wait)
	require.Equal(t, allButReport, granted(), "the override is still in force")

	// The rest arrives within the window: the window starts again.
	clock.Advance(settle / 2)
	_, err = file.WriteString(hideReport2[len(grantPrefix):])
	require.NoError(t, err)
	require.NoError(t, file.Close())
	changed, wait, err = e.ReloadOnce(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, settle, wait, "the window runs from the last change")

	clock.Advance(settle - time.Nanosecond)
	changed, wait, err = e.ReloadOnce(context.Background())
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, time.Nanosecond, wait)
	require.Equal(t, allButReport, granted())

	clock.Advance(time.Nanosecond)
	changed, wait, err = e.ReloadOnce(context.Background())
	require.NoError(t, err)
	require.True(t, changed, "the whole file, once stable, is loaded")
	require.Zero(t, wait)
	require.Equal(t, allButReport2, granted())
	require.NoError(t, e.LastError())
}

// TestHalfWrittenPolicyNeverServedByWatch is the finding as reported,
// through a running Watch: the policy is written in place, the watch sees
// the prefix (a reload attempt past the debounce), then the rest is
// written. No revision without the override is ever installed.
//
// The settle window runs on a fake clock that stands still until the whole
// file is on disk, so however long the machine takes between the two
// chunks, the window cannot end on the prefix; then the clock moves on
// until the watch has loaded the whole file. The watch's own timers are
// real and short (Settle), so that it keeps looking.
func TestHalfWrittenPolicyNeverServedByWatch(t *testing.T) {
	t.Parallel()
	const settle = 10 * time.Millisecond
	clock := testclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	f := newWatchFixture(t, map[string]string{"grant.rego": hideReport})
	f.start(watch.Options{Debounce: 5 * time.Millisecond, Settle: settle}, engine.WithClock(clock.Now))
	require.Equal(t, allButReport, f.granted())

	file, err := os.OpenFile(f.pol("grant.rego"), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	defer file.Close()
	_, err = file.WriteString(grantPrefix)
	require.NoError(t, err)
	// Wait until the watch has looked at the half-written file: it either
	// holds it back (logged) or, as before the fix, installs it.
	require.Eventually(t, func() bool {
		return f.logs.Count("a file changed") > 0 || len(f.revisions()) > 0
	}, failureBound, time.Millisecond)
	_, err = file.WriteString(hideReport2[len(grantPrefix):])
	require.NoError(t, err)
	require.NoError(t, file.Close())

	// The whole file is on disk: whatever the watch has seen of it, a
	// window past every stamp it observed lets it load what is there now.
	require.Eventually(t, func() bool {
		clock.Advance(settle)
		return slices.Equal(f.granted(), allButReport2)
	}, failureBound, time.Millisecond, "the whole file was never loaded (last error: %v)", f.e.LastError())
	f.requireEveryRevisionHas(f.pol("grant.rego"))
	for _, r := range f.revisions() {
		g := r.Grant(context.Background(), carol, listReq).Granted()
		require.True(t, slices.Equal(g, allButReport2), "revision %v grants %v: a half-written policy was served", r, g)
	}
	require.Empty(t, f.reloadErrors())
}
