package bundle_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// opaVersion is the OPA release whose stock `opa build` must make bundles
// toolgate loads: the one go.mod requires.
const opaVersion = "v1.22.3"

// opa runs the stock opa CLI in dir: $TOOLGATE_OPA when set, else
// `go run github.com/open-policy-agent/opa@<opaVersion>`.
func opa(t *testing.T, dir string, args ...string) {
	t.Helper()
	var cmd *exec.Cmd
	if bin := os.Getenv("TOOLGATE_OPA"); bin != "" {
		cmd = exec.Command(bin, args...)
	} else {
		cmd = exec.Command("go", append([]string{"run", "github.com/open-policy-agent/opa@" + opaVersion}, args...)...)
	}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "opa %v: %s", args, out)
}

// TestStockOPABuildLoads pins down the documented way to make a bundle with
// stock OPA (package doc, README): the registry as toolgate/registry/data.yaml,
// the policies beside it, `opa build -b .`, signed with --signing-key.
func TestStockOPABuildLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the opa CLI")
	}
	if os.Getenv("TOOLGATE_OPA") == "" {
		proctest.RequireBuilds(t, "the stock opa CLI ($TOOLGATE_OPA names one to use instead)")
	}
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "b")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "toolgate", "registry"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "policies"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "toolgate", "registry", "data.yaml"), toolgate.ExampleRegistry(), 0o644))
	for _, name := range []string{"grant.rego", "call.rego"} {
		data, err := toolgate.Bundled.ReadFile("rego/" + name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, "policies", name), data, 0o644))
	}
	priv, pub := bundletest.KeyPair(t)
	opa(t, root, "build", "-b", ".", "-o", "../bundle.tar.gz", "--revision", "opa-1", "--signing-key", priv)

	raw, err := os.ReadFile(filepath.Join(dir, "bundle.tar.gz"))
	require.NoError(t, err)
	vc, err := bundle.VerificationOf(bundle.Signing{KeyFile: pub})
	require.NoError(t, err)
	b, err := bundle.Read(bytes.NewReader(raw), vc)
	require.NoError(t, err)
	src, err := bundle.ToSource(&b)
	require.NoError(t, err)
	e, err := engine.New(context.Background(), src)
	require.NoError(t, err)
	want, err := engine.New(context.Background(), toolgate.Source("", ""))
	require.NoError(t, err)
	require.Equal(t, "opa-1", e.Current().Label())
	require.Equal(t, want.Current().Registry().Tools, e.Current().Registry().Tools)
	require.ElementsMatch(t, []string{"policies/grant.rego", "policies/call.rego"}, e.Current().PolicyFiles())
}
