package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// goModVersion is the version go.mod requires of module.
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(proctest.Root, "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + ` (v\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "go.mod requires no %s", module)
	return string(m[1])
}

// TestE2EVersion: `toolgate version` prints the binary's build: the Go it
// was built with and the OPA and go-sdk of go.mod; serverInfo's version is
// its first line's.
func TestE2EVersion(t *testing.T) {
	skipShort(t)
	t.Parallel()
	bin := toolgateBinary(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, value, ok := strings.Cut(line, " ")
		require.True(t, ok, "line %q", line)
		got[name] = strings.TrimSpace(value)
	}
	require.Equal(t, runtime.Version(), got["go"])
	require.Equal(t, goModVersion(t, "github.com/open-policy-agent/opa"), got["opa"])
	require.Equal(t, goModVersion(t, "github.com/modelcontextprotocol/go-sdk"), got["go-sdk"])
	require.NotEmpty(t, got["toolgate"])
	require.Contains(t, got, "commit")

	out, err = exec.Command(bin, "version", "extra").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "version takes no arguments")

	cmd := exec.Command(bin, "serve", "--stdio", "--ledger", "memory", "--no-watch")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "version-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	info := cs.InitializeResult().ServerInfo
	require.Equal(t, "toolgate", info.Name)
	require.Equal(t, got["toolgate"], info.Version, "serverInfo's version is toolgate version's")
}
