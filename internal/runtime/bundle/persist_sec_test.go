package bundle_test

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
)

// TestPersistedBundleVerifiedAgain: the last good bundle persisted on
// disk is verified again when it is read back at start, so whoever can
// write the state directory cannot swap in an unsigned (or otherwise
// signed) bundle and have it served while the bundle server is down.
func TestPersistedBundleVerifiedAgain(t *testing.T) {
	t.Parallel()
	priv, pub := bundletest.KeyPair(t)
	otherPriv, _ := bundletest.KeyPair(t)
	good := build(t, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "r1", SigningKeyFile: priv})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) }))
	cfg := bundle.Config{URL: hs.URL + "/b.tar.gz", Signing: bundle.Signing{KeyFile: pub}}
	state := t.TempDir()
	c, err := bundle.New(cfg, bundle.Options{StateDir: state})
	require.NoError(t, err)
	_, err = c.Initial(context.Background())
	require.NoError(t, err)
	hs.Close() // the bundle server is down from now on

	var persisted string
	require.NoError(t, filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "bundle.tar.gz" {
			persisted = p
		}
		return err
	}))
	require.NotEmpty(t, persisted)
	for name, swap := range map[string][]byte{
		"unsigned":              build(t, bundletest.Example(t, grantEcho), bundle.BuildOptions{Revision: "evil"}),
		"signed with other key": build(t, bundletest.Example(t, grantEcho), bundle.BuildOptions{Revision: "evil", SigningKeyFile: otherPriv}),
	} {
		require.NoError(t, os.WriteFile(persisted, swap, 0o600))
		c, err := bundle.New(cfg, bundle.Options{StateDir: state})
		require.NoError(t, err)
		src, err := c.Initial(context.Background())
		require.Error(t, err, "%s: a swapped persisted bundle served as revision %q", name, src.Revision)
	}
}
