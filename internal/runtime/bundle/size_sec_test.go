package bundle_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
)

// TestDownloadBoundedWhole: each file of a bundle is bounded (16 MiB), and
// so is the bundle as a whole. OPA's reader holds every file in memory
// before it verifies a signature, so without a bound on the whole a bundle
// server (or anyone between it and toolgate over http) sends a gzip bomb
// of many files just under the file limit and toolgate holds them all:
// signing does not help, the signature is checked after. Refused here
// before anything unpacks it: at most MaxBundleBytes, unpacked.
func TestDownloadBoundedWhole(t *testing.T) {
	t.Parallel()
	ok := build(t, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "r1"})
	raw := bundletest.Bomb(t, ok, bundle.MaxBundleBytes/(15<<20)+1, 15<<20)
	require.Less(t, len(raw), 1<<20, "the bomb is small on the wire")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(raw)
	}))
	defer hs.Close()
	c, err := bundle.New(bundle.Config{URL: hs.URL + "/b.tar.gz"}, bundle.Options{})
	require.NoError(t, err)
	_, err = c.Initial(context.Background())
	require.Error(t, err, "a bundle of %d MiB unpacked was accepted", bundle.MaxBundleBytes>>20+15)
	require.Contains(t, err.Error(), "larger than")
}

// TestOCIDownloadBoundedWhole: the same bound for a bundle pulled from an
// OCI registry (the layer is the bundle).
func TestOCIDownloadBoundedWhole(t *testing.T) {
	t.Parallel()
	ok := build(t, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "r1"})
	raw := bundletest.Bomb(t, ok, bundle.MaxBundleBytes/(15<<20)+1, 15<<20)
	reg := bundletest.NewOCIRegistry("")
	defer reg.Close()
	ref := reg.Ref("org/policy:bomb")
	ociPush(t, reg, ref, raw)
	c, err := bundle.New(bundle.Config{URL: "http://" + ref, Type: bundle.TypeOCI}, bundle.Options{})
	require.NoError(t, err)
	_, err = c.Initial(context.Background())
	require.Error(t, err, "a bundle of %d MiB unpacked was accepted", bundle.MaxBundleBytes>>20+15)
	require.Contains(t, err.Error(), "larger than")
}
