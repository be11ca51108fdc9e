package engine_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

// TestReloadFrom pins down the reload of a source replaced whole (an OPA
// bundle, docs/contract.md §14): a good source swaps in with its label, a bad one keeps
// the last good revision and source, and the label is in Status and String.
func TestReloadFrom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := func(rev, policy string) engine.Source {
		return engine.Source{FS: fstest.MapFS{
			"registry.yaml":       {Data: []byte(testRegistry)},
			"policies/grant.rego": {Data: []byte(policy)},
		}, Registry: "registry.yaml", Policies: "policies", Revision: rev}
	}
	const v1 = "package toolgate.grant\n\ngranted contains \"echo\"\n"
	const v2 = "package toolgate.grant\n\ngranted contains \"report\"\n"
	e, err := engine.New(ctx, src("r1", v1))
	require.NoError(t, err)
	var swaps []string
	defer e.Listen(func(old, next *engine.Revision) { swaps = append(swaps, old.String()+"->"+next.String()) })()
	require.Equal(t, "r1", e.Current().Label())
	require.Equal(t, "r1", e.Current().String())
	require.Equal(t, "r1", e.Status().Label)

	changed, err := e.ReloadFrom(ctx, src("r2", v2))
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "r2", e.Status().Label)
	require.Equal(t, "r2", e.Source().Revision)
	require.Equal(t, []string{"r1->r2"}, swaps)

	// Does not compile: r2 keeps serving, the failure is reported.
	changed, err = e.ReloadFrom(ctx, src("r3", "package toolgate.grant\n\ngranted contains x\n"))
	require.Error(t, err)
	require.False(t, changed)
	st := e.Status()
	require.Equal(t, "r2", st.Label)
	require.Contains(t, st.LastError, `revision "r3": `)
	require.Equal(t, uint64(1), st.ReloadFailures)
	require.Equal(t, "r2", e.Source().Revision)

	// The same content under a new label is a new revision.
	changed, err = e.ReloadFrom(ctx, src("r4", v2))
	require.NoError(t, err)
	require.True(t, changed)
	st = e.Status()
	require.Equal(t, "r4", st.Label)
	require.Empty(t, st.LastError)
	require.Equal(t, []string{"r1->r2", "r2->r4"}, swaps)

	// The same content and label installs nothing.
	changed, err = e.ReloadFrom(ctx, src("r4", v2))
	require.NoError(t, err)
	require.False(t, changed)
}

// TestUnlabelledStringUnchanged: a source naming no revision keeps the
// number/short-hash form in logs and audit records.
func TestUnlabelledStringUnchanged(t *testing.T) {
	t.Parallel()
	e := newEngine(t, nil)
	rev := e.Current()
	require.Empty(t, rev.Label())
	require.Equal(t, "1/"+rev.Hash()[:12], rev.String())
}
