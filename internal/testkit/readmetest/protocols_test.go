package readmetest

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestReadmeProtocolRevisions: every protocol revision docs/clients.md
// lists as served is served by the binary: a go-sdk client that asks for it gets
// it, sees the bundled example's tools with the demo token, and calls one.
func TestReadmeProtocolRevisions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	root := checkout(t)
	md, err := os.ReadFile(filepath.Join(root, clientsPage))
	require.NoError(t, err)
	const claim = "Every protocol revision the go-sdk serves is served:"
	i := strings.Index(string(md), claim)
	require.GreaterOrEqual(t, i, 0, "%s no longer says %q", clientsPage, claim)
	para, _, _ := strings.Cut(string(md[i:]), "\n\n")
	versions := regexp.MustCompile(`\d{4}-\d{2}-\d{2}`).FindAllString(para, -1)
	require.NotEmpty(t, versions, "no revision in %q", para)

	ctx, cancel := context.WithTimeout(t.Context(), tourTimeout)
	defer cancel()
	bin, err := goBuild(ctx, root, "toolgate", "./cmd/toolgate")
	require.NoError(t, err)
	state := t.TempDir()
	cmd := exec.Command(bin, "serve", "--http", "127.0.0.1:0", "--ledger", "memory", "--no-watch")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "HOME="+state)
	srv := &server{cmd: cmd, stderr: &proctest.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = srv.stderr, srv.stderr
	require.NoError(t, cmd.Start())
	go func() { srv.err = cmd.Wait(); close(srv.exited) }()
	tr := &tour{server: srv}
	t.Cleanup(tr.stop)
	at := regexp.MustCompile(`serving MCP \(streamable HTTP\) at (http://127\.0\.0\.1:\d+/mcp)`)
	demo := regexp.MustCompile(`Authorization: Bearer (\S+)\n`)
	require.NoError(t, srv.wait(ctx, func(out string) bool { return at.MatchString(out) && demo.MatchString(out) }),
		"the bundled example says where it serves and prints its demo token")
	url := at.FindStringSubmatch(srv.stderr.String())[1]
	token := demo.FindStringSubmatch(srv.stderr.String())

	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "readme-protocols", Version: "v0"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
				HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token[1], Next: http.DefaultTransport}}},
				&mcp.ClientSessionOptions{ProtocolVersion: v})
			require.NoError(t, err, "connect under %s; server output:\n%s", v, srv.stderr.String())
			defer cs.Close()
			require.Equal(t, v, cs.InitializeResult().ProtocolVersion, "negotiated revision")
			names, err := listNames(ctx, cs)
			require.NoError(t, err)
			require.Contains(t, names, "echo")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi " + v}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Equal(t, "hi "+v, res.Content[0].(*mcp.TextContent).Text)
		})
	}
}
