package toolgate_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// copyBundled writes the bundled example into dir: its registry file and
// policy directory.
func copyBundled(t *testing.T, dir string) (registry, policies string) {
	t.Helper()
	registry = filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(registry, toolgate.ExampleRegistry(), 0o644))
	policies = filepath.Join(dir, "rego")
	require.NoError(t, os.CopyFS(policies, toolgate.ExamplePolicies()))
	return registry, policies
}

// newAuditedServer serves the bundled example, copied to a temporary
// directory so that a test may rewrite its registry, as the admin "ann",
// with its audit trail written to the returned buffer.
func newAuditedServer(ctx context.Context, t *testing.T) (srv *toolgate.Server, registry string, trail *proctest.Buffer) {
	t.Helper()
	reg, pol := copyBundled(t, t.TempDir())
	trail = &proctest.Buffer{}
	srv, err := toolgate.New(ctx, toolgate.Options{
		Registry: reg, Policies: pol,
		Methods: demo.Methods(),
		Caller:  mcpadapter.StaticCaller(&toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}),
		Audit:   trail,
	})
	require.NoError(t, err)
	return srv, reg, trail
}

// addShout rewrites the registry at reg as the bundled one plus the tool
// "shout", the change a reload test makes to a session's listing.
func addShout(t *testing.T, reg string) {
	t.Helper()
	require.NoError(t, os.WriteFile(reg, append(toolgate.ExampleRegistry(), []byte(`
  - name: shout
    method: demo.echo
    description: Echoes, louder.
    arguments:
      - { name: text, type: string, required: true }
`)...), 0o644))
}

// TestServerReloadNotifiesAndAuditCloses: the front door wires what an
// embedder used to forget: a Reload that changes a session's
// listing sends it notifications/tools/list_changed, and Close flushes
// the audit trail it built.
func TestServerReloadNotifiesAndAuditCloses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure bound only
	defer cancel()
	srv, reg, trail := newAuditedServer(ctx, t)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = srv.Close()
		}
	})

	changed := make(chan struct{}, 10)
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	go func() { _ = srv.Serve(ctx, serverEnd) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, clientEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	names := func() []string {
		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var out []string
		for _, tl := range list.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	require.NotContains(t, names(), "shout")

	addShout(t, reg)
	require.NoError(t, srv.Reload(ctx))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after a reload that changed the listing")
	}
	require.Contains(t, names(), "shout")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, srv.Close())
	closed = true
	require.Contains(t, trail.String(), `"tool":"shout"`, "Close flushes the audit trail")
	require.NoError(t, srv.Close(), "a second Close is harmless")
}

// TestServerNeedsMethods: New refuses Options without methods, and a
// registry that does not load.
func TestServerNeedsMethods(t *testing.T) {
	t.Parallel()
	_, err := toolgate.New(context.Background(), toolgate.Options{})
	require.ErrorContains(t, err, "Options.Methods is required")
	_, err = toolgate.New(context.Background(), toolgate.Options{Methods: demo.Methods(), Registry: filepath.Join(t.TempDir(), "none.yaml")})
	require.Error(t, err)
}

// TestServerHandlerWraps: Handler serves streamable HTTP through the wire
// layer: a tools/call whose name is an integer gets docs/contract.md §5's answer for
// the name "7" (a tool call result), not the go-sdk's JSON-RPC error.
func TestServerHandlerWraps(t *testing.T) {
	t.Parallel()
	srv, err := toolgate.New(context.Background(), toolgate.Options{
		Methods: demo.Methods(),
		Caller:  mcpadapter.StaticCaller(&toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}),
	})
	require.NoError(t, err)
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	session := ""
	post := func(body string) string {
		req, err := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		if session == "" {
			session = res.Header.Get("Mcp-Session-Id")
		}
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return string(b)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	require.NotEmpty(t, session)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	got := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":7,"arguments":{}}}`)
	require.Contains(t, got, `Error: Unknown tool '7'.`, got)
	require.Contains(t, got, `"isError":true`, got)
}

// TestServeAnswersBeforeEOF: a client that writes its request and closes
// its end at once (`printf ... | embedded-server`) gets the answer before
// Serve returns, every time: the go-sdk alone cancels the requests in
// flight when its read fails, and the answer was lost.
func TestServeAnswersBeforeEOF(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a failure bound only
	defer cancel()
	srv, err := toolgate.New(ctx, toolgate.Options{
		Methods: demo.Methods(),
		Caller:  mcpadapter.StaticCaller(&toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}),
	})
	require.NoError(t, err)
	defer srv.Close()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"me","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"last"}}}`,
	}, "\n") + "\n"
	for i := range 100 {
		var out proctest.Buffer
		err := srv.Serve(ctx, &mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(in)), Writer: nopWriteCloser{&out}})
		if err != nil && !errors.Is(err, io.EOF) {
			require.NoError(t, err, "run %d", i)
		}
		require.Contains(t, out.String(), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"last"}]}}`,
			"run %d: the answer to the last request, written before Serve returned", i)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
