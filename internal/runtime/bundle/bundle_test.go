package bundle_test

import (
	"bytes"
	"context"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
)

func build(t *testing.T, src engine.Source, o bundle.BuildOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, bundle.Build(context.Background(), &buf, src, o))
	return buf.Bytes()
}

func TestBuildLoadsBack(t *testing.T) {
	t.Parallel()
	raw := build(t, bundletest.Example(t, ""), bundle.BuildOptions{Revision: "rev-1"})
	b, err := bundle.Read(bytes.NewReader(raw), nil)
	require.NoError(t, err)
	require.Equal(t, "rev-1", b.Manifest.Revision)
	src, err := bundle.ToSource(&b)
	require.NoError(t, err)
	e, err := engine.New(context.Background(), src)
	require.NoError(t, err)
	want, err := engine.New(context.Background(), toolgate.Source("", ""))
	require.NoError(t, err)
	require.Equal(t, want.Current().Registry().Tools, e.Current().Registry().Tools)
	require.Equal(t, "rev-1", e.Current().String())
	require.ElementsMatch(t, []string{"call.rego", "grant.rego", "limits.rego", "result.rego"}, e.Current().PolicyFiles())
}

func TestBuildRefusesWhatDoesNotLoad(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	err := bundle.Build(context.Background(), &buf, bundletest.Example(t, "package toolgate.grant\n\ngranted contains x\n"), bundle.BuildOptions{})
	require.Error(t, err)
	require.Zero(t, buf.Len())
}

func TestToSourceWithoutRegistry(t *testing.T) {
	t.Parallel()
	raw := build(t, bundletest.Example(t, ""), bundle.BuildOptions{})
	b, err := bundle.Read(bytes.NewReader(raw), nil)
	require.NoError(t, err)
	delete(b.Data, "toolgate")
	_, err = bundle.ToSource(&b)
	require.ErrorIs(t, err, bundle.ErrNoRegistry)

	b.Manifest.Init()
	b.Patch = opabundle.Patch{Data: []opabundle.PatchOperation{{Op: "upsert", Path: "/x", Value: 1}}}
	_, err = bundle.ToSource(&b)
	require.ErrorIs(t, err, bundle.ErrDelta)
}

// eventually polls cond until it holds; the deadline only bounds a failure.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

const grantEcho = "package toolgate.grant\n\ngranted := {\"echo\"}\n"

// transport is where a client's bundles come from, for clientLifecycle.
type transport struct {
	// publish makes raw the bundle the transport serves.
	publish func(raw []byte)
	// stop ends the transport once the client's Run has ended.
	stop func()
	// done, when set, checks a client that has done: the first once Run
	// has ended, the one without persisted state once Initial failed.
	done func(c *bundle.Client)
}

// clientLifecycle walks a bundle's life with a client of cfg (its
// Signing.KeyFile is set to a fresh public key) over tr: r1 downloaded and
// served, replaced by r2, a bad signature (r3) and a bundle that does not
// compile (r4) refused with r2 serving, the state persisted with private
// modes, and after a restart without the transport r2 served. It returns
// the first client.
func clientLifecycle(t *testing.T, cfg bundle.Config, tr transport) *bundle.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	priv, pub := bundletest.KeyPair(t)
	otherPriv, _ := bundletest.KeyPair(t)
	signed := func(rev, grant, key string) []byte {
		return build(t, bundletest.Example(t, grant), bundle.BuildOptions{Revision: rev, SigningKeyFile: key})
	}
	cfg.Signing.KeyFile = pub
	tr.publish(signed("r1", "", priv))
	state := t.TempDir()
	var activated, refused atomic.Int32
	c, err := bundle.New(cfg, bundle.Options{StateDir: state,
		OnActivated: func(string) { activated.Add(1) }, OnRefused: func(error) { refused.Add(1) }})
	require.NoError(t, err)
	src, err := c.Initial(ctx)
	require.NoError(t, err)
	require.Equal(t, "r1", src.Revision)
	require.NotEmpty(t, c.Status().ETag)
	eng, err := engine.New(ctx, src)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, eng) }()

	tr.publish(signed("r2", grantEcho, priv))
	eventually(t, "r2 activated", func() bool { return activated.Load() == 1 }) // after the swap and the persisting
	require.Equal(t, "r2", eng.Current().Label())
	require.Empty(t, c.Status().LastError)
	require.Equal(t, "r2", c.Status().Revision)
	require.Equal(t, int32(1), activated.Load())
	require.Zero(t, refused.Load())

	tr.publish(signed("r3", "", otherPriv)) // signed with a key we do not trust
	eventually(t, "r3 refused", func() bool { return refused.Load() > 0 })
	require.Contains(t, c.Status().LastError, "signature")
	require.Contains(t, eng.Status().LastError, "signature") // /healthz says so
	require.Equal(t, "r2", eng.Current().Label())
	require.Equal(t, "r2", c.Status().Revision)

	// Signed right, but does not compile: built by hand, as Build refuses it.
	bad := bundletest.Example(t, "")
	bad.FS.(fstest.MapFS)["policies/broken.rego"] = &fstest.MapFile{Data: []byte("package toolgate.grant\n\nx := y\n")}
	raw, err := bundletest.SignedUnchecked(bad, "r4", priv)
	require.NoError(t, err)
	tr.publish(raw)
	eventually(t, "r4 refused", func() bool {
		return bytes.Contains([]byte(c.Status().LastError), []byte("r4"))
	})
	require.Equal(t, "r2", eng.Current().Label())
	require.NotEmpty(t, eng.Status().LastError)
	require.Equal(t, int32(1), activated.Load())

	cancel()
	<-done
	tr.stop()
	if tr.done != nil {
		tr.done(c)
	}

	// Persisted with private modes.
	var files []string
	require.NoError(t, filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		if p == state {
			return nil
		}
		if d.IsDir() {
			require.Equal(t, fs.FileMode(0o700), st.Mode().Perm(), p)
		} else {
			require.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), p)
			files = append(files, filepath.Base(p))
		}
		return nil
	}))
	require.ElementsMatch(t, []string{"bundle.tar.gz", "etag"}, files)

	// A restart while the transport is down serves the last good bundle.
	c2, err := bundle.New(cfg, bundle.Options{StateDir: state})
	require.NoError(t, err)
	src, err = c2.Initial(context.Background())
	require.NoError(t, err)
	require.Equal(t, "r2", src.Revision)
	require.True(t, c2.Status().Persisted)

	// Without a persisted bundle and without the transport there is nothing to serve.
	c3, err := bundle.New(cfg, bundle.Options{StateDir: t.TempDir()})
	require.NoError(t, err)
	_, err = c3.Initial(context.Background())
	require.Error(t, err)
	if tr.done != nil {
		tr.done(c3)
	}
	return c
}

// TestClient walks a bundle's life (clientLifecycle) with the bundle
// served over HTTP with an ETag.
func TestClient(t *testing.T) {
	t.Parallel()
	srv := bundletest.NewServer(nil)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	one := int64(1)
	clientLifecycle(t, bundle.Config{URL: hs.URL + "/bundles/toolgate.tar.gz", Polling: bundle.Polling{MinDelaySeconds: &one, MaxDelaySeconds: &one}},
		transport{publish: srv.Set, stop: hs.Close})
}
