package bundle_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
)

// TestOlderBundleRevisionRefused: with
// bundle.refuse_older_revisions, an older bundle, validly signed (a replay
// by whoever controls the bundle server or the network), is refused like a
// bad one and the newer keeps serving; "v9" is older than "v10" (version
// order, not byte order), and a newer one activates after. Without the
// setting the rollback activates, logged and counted.
func TestOlderBundleRevisionRefused(t *testing.T) {
	t.Parallel()
	for _, refuse := range []bool{true, false} {
		t.Run(map[bool]string{true: "refused", false: "counted"}[refuse], func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			priv, pub := bundletest.KeyPair(t)
			signed := func(rev, grant string) []byte {
				return build(t, bundletest.Example(t, grant), bundle.BuildOptions{Revision: rev, SigningKeyFile: priv})
			}
			srv := bundletest.NewServer(signed("v10", ""))
			hs := httptest.NewServer(srv)
			defer hs.Close()
			one := int64(1)
			var activated, refused atomic.Int32
			c, err := bundle.New(bundle.Config{URL: hs.URL + "/b.tar.gz", Polling: bundle.Polling{MinDelaySeconds: &one, MaxDelaySeconds: &one},
				Signing: bundle.Signing{KeyFile: pub}, RefuseOlderRevisions: refuse},
				bundle.Options{StateDir: t.TempDir(), OnActivated: func(string) { activated.Add(1) }, OnRefused: func(error) { refused.Add(1) }})
			require.NoError(t, err)
			src, err := c.Initial(ctx)
			require.NoError(t, err)
			eng, err := engine.New(ctx, src)
			require.NoError(t, err)
			done := make(chan struct{})
			go func() { defer close(done); _ = c.Run(ctx, eng) }()
			defer func() { cancel(); <-done }()

			srv.Set(signed("v9", grantEcho)) // older, validly signed
			if refuse {
				eventually(t, "v9 refused", func() bool { return refused.Load() > 0 })
				require.Equal(t, "v10", eng.Current().Label())
				require.Equal(t, `bundle revision "v9" is older than "v10", the one serving (bundle.refuse_older_revisions)`, c.Status().LastError)
				require.Contains(t, eng.Status().LastError, "older than", "/healthz says degraded")
				require.Equal(t, uint64(1), c.Status().Rollbacks)
				require.Zero(t, activated.Load())

				srv.Set(signed("v11", grantEcho)) // newer: activates
				eventually(t, "v11 activated", func() bool { return activated.Load() == 1 })
				require.Equal(t, "v11", eng.Current().Label())
				require.Empty(t, c.Status().LastError)
				return
			}
			eventually(t, "v9 activated", func() bool { return activated.Load() == 1 })
			require.Equal(t, "v9", eng.Current().Label())
			require.Equal(t, uint64(1), c.Status().Rollbacks)
			require.Zero(t, refused.Load())
		})
	}
}

func TestCompareRevisions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"9", "10", -1}, {"10", "9", 1}, {"v1.9", "v1.10", -1}, {"v1.10", "v1.10", 0},
		{"007", "7", 0}, {"7", "08", -1}, {"", "1", -1}, {"1", "", 1}, {"", "", 0},
		{"r1", "r1a", -1}, {"r1a", "r1b", -1}, {"a", "b", -1}, {"B", "a", -1},
		{"2026-12-01T10:00:00Z", "2026-12-02T09:00:00Z", -1},
		{"2026-12-02T09:00:00Z", "2026-12-01T10:00:00Z", 1},
		{"1.2.3", "1.2.3-rc1", -1}, {"99999999999999999999999", "100000000000000000000000", -1},
		{"a1", "1a", 1}, {"build-20", "build-100", -1},
	} {
		if got := bundle.CompareRevisions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareRevisions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// FuzzCompareRevisions: the order is total and consistent: antisymmetric,
// reflexive, and a revision with a run appended is newer.
func FuzzCompareRevisions(f *testing.F) {
	f.Add("v9", "v10")
	f.Add("2026-12-01T10:00:00Z", "2026-12-02T09:00:00Z")
	f.Add("007", "7")
	f.Add("", "a")
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, ba := bundle.CompareRevisions(a, b), bundle.CompareRevisions(b, a)
		if ab != -ba || ab < -1 || ab > 1 {
			t.Fatalf("CompareRevisions(%q, %q) = %d, reversed %d", a, b, ab, ba)
		}
		if bundle.CompareRevisions(a, a) != 0 {
			t.Fatalf("%q is not its own equal", a)
		}
		if a == b && ab != 0 {
			t.Fatalf("equal strings compare %d", ab)
		}
		if c := bundle.CompareRevisions(a, a+"x"); c != -1 {
			t.Fatalf("CompareRevisions(%q, %q+x) = %d", a, a, c)
		}
	})
}
