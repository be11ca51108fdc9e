package bundle_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/bundle"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/bundletest"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	priv, pub := bundletest.KeyPair(t)
	otherPriv, _ := bundletest.KeyPair(t)
	signed := func(rev, grant, key string) []byte {
		return build(t, bundletest.Example(t, grant), bundle.BuildOptions{Revision: rev, SigningKeyFile: key})
	}
	const token = "registry-token"
	reg := bundletest.NewOCIRegistry(token)
	defer reg.Close()
	ref := reg.Ref("org/policy:live")
	ociPush(t, reg, ref, signed("r1", "", priv))

	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	one := int64(1)
	cfg := bundle.Config{URL: "http://" + ref, Type: bundle.TypeOCI,
		Credentials: bundle.Credentials{Bearer: bundle.Bearer{TokenPath: tokenFile}},
		Polling:     bundle.Polling{MinDelaySeconds: &one, MaxDelaySeconds: &one},
		Signing:     bundle.Signing{KeyFile: pub}}
	state := t.TempDir()
	var activated, refused atomic.Int32
	c, err := bundle.New(cfg, bundle.Options{StateDir: state,
		OnActivated: func(string) { activated.Add(1) }, OnRefused: func(error) { refused.Add(1) }})
	require.NoError(t, err)
	src, err := c.Initial(ctx)
	require.NoError(t, err)
	require.Equal(t, "r1", src.Revision)
	require.NotEmpty(t, c.Status().ETag) // the layer's digest
	eng, err := engine.New(ctx, src)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, eng) }()

	ociPush(t, reg, ref, signed("r2", grantEcho, priv))
	eventually(t, "r2 activated", func() bool { return activated.Load() == 1 })
	require.Equal(t, "r2", eng.Current().Label())
	require.Empty(t, c.Status().LastError)
	require.Equal(t, "r2", c.Status().Revision)
	require.Zero(t, refused.Load())

	ociPush(t, reg, ref, signed("r3", "", otherPriv)) // signed with a key we do not trust
	eventually(t, "r3 refused", func() bool { return refused.Load() > 0 })
	require.Contains(t, c.Status().LastError, "signature")
	require.Contains(t, eng.Status().LastError, "signature")
	require.Equal(t, "r2", eng.Current().Label())
	require.Equal(t, "r2", c.Status().Revision)

	bad := bundletest.Example(t, "")
	bad.FS.(fstest.MapFS)["policies/broken.rego"] = &fstest.MapFile{Data: []byte("package toolgate.grant\n\nx := y\n")}
	raw, err := bundletest.SignedUnchecked(bad, "r4", priv)
	require.NoError(t, err)
	ociPush(t, reg, ref, raw)
	eventually(t, "r4 refused", func() bool {
		return bytes.Contains([]byte(c.Status().LastError), []byte("r4"))
	})
	require.Equal(t, "r2", eng.Current().Label())
	require.NotEmpty(t, eng.Status().LastError)
	require.Equal(t, int32(1), activated.Load())
	require.Zero(t, reg.Unauthorized.Load(), "every request carried the token")

	cancel()
	<-done
	reg.Close()
	_, err = os.Stat(bundle.OCIDir(c))
	require.ErrorIs(t, err, fs.ErrNotExist, "the OCI download directory is removed when Run ends")

	var files []string
	require.NoError(t, filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, filepath.Base(p))
		}
		return err
	}))
	require.ElementsMatch(t, []string{"bundle.tar.gz", "etag"}, files)

	// A restart while the registry is down serves the last good bundle.
	c2, err := bundle.New(cfg, bundle.Options{StateDir: state})
	require.NoError(t, err)
	src, err = c2.Initial(context.Background())
	require.NoError(t, err)
	require.Equal(t, "r2", src.Revision)
	require.True(t, c2.Status().Persisted)

	// Without a persisted bundle and without the registry there is nothing to serve.
	c3, err := bundle.New(cfg, bundle.Options{StateDir: t.TempDir()})
	require.NoError(t, err)
	_, err = c3.Initial(context.Background())
	require.Error(t, err)
	_, err = os.Stat(bundle.OCIDir(c3))
	require.ErrorIs(t, err, fs.ErrNotExist)
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
