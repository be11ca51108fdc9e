package gateway_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
	"github.com/toolgate/toolgate/toolcall"
)

// exampleBundle is the bundled example as a bundle of revision rev, with
// grant.rego replaced by grant when grant is not "".
func exampleBundle(t *testing.T, rev, grant string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, bundle.Build(context.Background(), &buf, bundletest.Example(t, grant), bundle.BuildOptions{Revision: rev}))
	return buf.Bytes()
}

// TestBundleFromOCIRegistry: serve takes its registry and policies from a
// bundle in an OCI registry (docs/contract.md §14), authenticated with a
// bearer token from a file; a new revision pushed to the tag is served,
// and /healthz names the revision and the layer digest. Not parallel: the
// state directory is set through the environment.
func TestBundleFromOCIRegistry(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	reg := bundletest.NewOCIRegistry("registry-token")
	defer reg.Close()
	ref := reg.Ref("org/toolgate:prod")
	require.NoError(t, reg.Push(t.Context(), ref, exampleBundle(t, "oci-1", "")))
	tokenFile := filepath.Join(dir, "registry-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("registry-token\n"), 0o600))

	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"manager", "reader"}}
	admin := &toolcall.Caller{Subject: "root", Roles: []string{"admin"}}
	one := int64(1)
	g := startGateway(t, gateway.Config{Serve: config.Serve{
		Tokens: writeTokens(t, dir, ops, admin), Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl"),
		Bundle: bundle.Config{URL: "http://" + ref, Type: bundle.TypeOCI,
			Credentials: bundle.Credentials{Bearer: bundle.Bearer{TokenPath: tokenFile}},
			Polling:     bundle.Polling{MinDelaySeconds: &one, MaxDelaySeconds: &one}},
	}})
	defer func() { require.NoError(t, g.stop()) }()
	healthURL := strings.TrimSuffix(g.url, "/mcp") + "/healthz?verbose=1"
	h := fetchHealth(t, healthURL, tokenFor(admin))
	require.Equal(t, "oci-1", h.BundleRevision)
	require.NotNil(t, h.Bundle)
	require.Len(t, h.Bundle.ETag, 64, "the layer's sha256 digest")

	names := func() []string {
		cs := connect(t, t.Context(), g.url, protocols[len(protocols)-1], ops)
		defer cs.Close()
		res, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{})
		require.NoError(t, err)
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	require.Greater(t, len(names()), 1)

	require.NoError(t, reg.Push(t.Context(), ref, exampleBundle(t, "oci-2", "package toolgate.grant\n\ngranted := {\"echo\"}\n")))
	for deadline := time.Now().Add(30 * time.Second); h.BundleRevision != "oci-2"; {
		require.True(t, time.Now().Before(deadline), "oci-2 not served: %+v", h)
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
		h = fetchHealth(t, healthURL, tokenFor(admin))
	}
	require.Equal(t, []string{"echo"}, names())
	require.Equal(t, "ok", h.Status)
	require.Zero(t, reg.Unauthorized.Load())
}
