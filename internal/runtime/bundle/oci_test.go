package bundle_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
)

// ociPush pushes raw to ref in reg, failing the test when it cannot.
func ociPush(t *testing.T, reg *bundletest.OCIRegistry, ref string, raw []byte) {
	t.Helper()
	require.NoError(t, reg.Push(context.Background(), ref, raw))
}

// TestOCIClient walks a bundle's life as TestClient does, with the bundle
// pulled from an OCI registry by OPA's OCI downloader: pulled and served,
// a new revision pushed to the same tag picked up, a bad signature and a
// bundle that does not compile refused with the last good one serving,
// the bearer token sent, and after a restart without the registry the
// persisted bundle served.
func TestOCIClient(t *testing.T) {
	t.Parallel()
	const token = "registry-token"
	reg := bundletest.NewOCIRegistry(token)
	defer reg.Close()
	ref := reg.Ref("org/policy:live")
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	one := int64(1)
	cfg := bundle.Config{URL: "http://" + ref, Type: bundle.TypeOCI,
		Credentials: bundle.Credentials{Bearer: bundle.Bearer{TokenPath: tokenFile}},
		Polling:     bundle.Polling{MinDelaySeconds: &one, MaxDelaySeconds: &one}}
	clientLifecycle(t, cfg, transport{
		publish: func(raw []byte) { ociPush(t, reg, ref, raw) },
		stop: func() {
			require.Zero(t, reg.Unauthorized.Load(), "every request carried the token")
			reg.Close()
		},
		done: func(c *bundle.Client) {
			_, err := os.Stat(bundle.OCIDir(c))
			require.ErrorIs(t, err, fs.ErrNotExist, "the OCI download directory is removed when Run ends")
		},
	})
}

// TestOCIWithoutToken: a registry that wants a token refuses the pull
// when none is configured, and serve does not start.
func TestOCIWithoutToken(t *testing.T) {
	t.Parallel()
	reg := bundletest.NewOCIRegistry("registry-token")
	defer reg.Close()
	ref := reg.Ref("org/policy:live")
	ociPush(t, reg, ref, build(t, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "r1"}))
	c, err := bundle.New(bundle.Config{URL: "http://" + ref, Type: bundle.TypeOCI}, bundle.Options{})
	require.NoError(t, err)
	_, err = c.Initial(context.Background())
	require.ErrorContains(t, err, "401")
	require.NotZero(t, reg.Unauthorized.Load())
}

func TestOCIConfig(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"oci://ghcr.io/org/policy:v1":                       "",
		"oci://ghcr.io/org/policy@sha256:" + sixtyFourZeros: "",
		"oci://ghcr.io/org/policy":                          "no tag or digest",
		"oci://ghcr.io":                                     "want an OCI reference",
		"oci://ghcr.io/org/policy:v1?x=1":                   "without query",
		"oci://":                                            "want an http(s) URL",
	} {
		err := bundle.Config{URL: url}.Validate()
		if want == "" {
			require.NoError(t, err, url)
			require.True(t, bundle.Config{URL: url}.OCI())
		} else {
			require.ErrorContains(t, err, want, url)
		}
	}
	require.ErrorContains(t, bundle.Config{URL: "oci://ghcr.io/org/policy:v1", Type: "http"}.Validate(), `of type "oci"`)
	require.ErrorContains(t, bundle.Config{URL: "http://h/b.tar.gz", Type: "s3"}.Validate(), "bundle type")
	require.False(t, bundle.Config{URL: "http://h/b.tar.gz"}.OCI())
	require.NoError(t, bundle.Config{URL: "http://127.0.0.1:5000/org/policy:v1", Type: "oci"}.Validate())
}

const sixtyFourZeros = "0000000000000000000000000000000000000000000000000000000000000000"
