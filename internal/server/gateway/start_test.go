package gateway_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/childupstream"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// childSettings is an importing upstream running a child of
// childupstream, its section granted to admin.
func childSettings(name string, argv []string) upstream.Settings {
	return upstream.Settings{Name: name, Command: argv[0], Args: argv[1:], Import: true}
}

// startServe is the settings of a gateway in dir serving ups, their
// sections granted to admin.
func startServe(t *testing.T, dir string, ups ...upstream.Settings) config.Serve {
	t.Helper()
	sections := "sections:\n"
	for _, u := range ups {
		sections += "  \"upstream:" + u.Name + "\": { roles: [admin] }\n"
	}
	reg, pol := writeSource(t, dir, sections+"tools: []\n", "package toolgate.grant\n")
	watch := false
	return config.Serve{Registry: reg, Policy: pol, Upstreams: ups, Ledger: "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch}
}

// serveStdioFront runs a gateway serving s over stdio as ann (admin) and
// returns a session of client to it.
func serveStdioFront(t *testing.T, s config.Serve, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	s.Stdio, s.As, s.Roles = true, "ann", []string{"admin"}
	s.EvalTimeout = time.Minute
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, gateway.Config{Serve: s, Stdin: inR, Stdout: outW, Stderr: testLog{t}})
	}()
	t.Cleanup(func() {
		cancel() // first: the server ends its session, not a drain of what the client left unanswered
		_ = inW.Close()
		_ = outR.Close()
		select {
		case <-done:
		case <-time.After(time.Minute): // a failure bound, not a measure
			t.Error("gateway.Run did not return after its context ended")
		}
	})
	if client == nil {
		client = mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil)
	}
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// serveHTTPFront runs a gateway serving s over HTTP and returns a session
// of ann (admin) to it.
func serveHTTPFront(t *testing.T, dir string, s config.Serve) *mcp.ClientSession {
	t.Helper()
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	s.Tokens = writeTokens(t, dir, ann)
	g := startGateway(t, gateway.Config{Serve: s, Stderr: testLog{t}})
	return connect(t, context.Background(), g.url, "2025-11-25", ann)
}

type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Logf("%s", b)
	return len(b), nil
}

func listedTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func prefixed(prefix string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// TestFirstListingAfterSlowStart: an upstream that takes 3 s before it
// reads stdin (a first npx run) is in the first listing of a client of
// either front: its tools, prompts and resources; initialize, answered at
// once, announces prompts, resources and completions.
func TestFirstListingAfterSlowStart(t *testing.T) {
	t.Parallel()
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := startServe(t, dir, childSettings("slow", childupstream.Slow(3*time.Second)))
			var cs *mcp.ClientSession
			if front == "stdio" {
				cs = serveStdioFront(t, s, nil)
			} else {
				cs = serveHTTPFront(t, dir, s)
			}
			caps := cs.InitializeResult().Capabilities
			require.NotNil(t, caps.Prompts, "prompts announced")
			require.NotNil(t, caps.Resources, "resources announced")
			require.NotNil(t, caps.Completions, "completions announced")

			require.ElementsMatch(t, prefixed("slow.", childupstream.Tools...), listedTools(t, cs))
			require.Equal(t, []string{"slow." + childupstream.Prompt}, promptNames(t, cs))
			require.Equal(t, []string{childupstream.Resource}, resourceURIs(t, cs))
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow.echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)
		})
	}
}

// TestServerIgnoringUnknownRequestsThroughGateway: an upstream that
// ignores requests it does not know before initialize (the Python SDK's
// servers) is reached, listed and called through either front.
func TestServerIgnoringUnknownRequestsThroughGateway(t *testing.T) {
	t.Parallel()
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := startServe(t, dir, childSettings("py", childupstream.IgnoresUnknown()))
			s.Upstreams[0].Timeout = time.Minute
			var cs *mcp.ClientSession
			if front == "stdio" {
				cs = serveStdioFront(t, s, nil)
			} else {
				cs = serveHTTPFront(t, dir, s)
			}
			require.ElementsMatch(t, prefixed("py.", childupstream.Tools...), listedTools(t, cs))
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "py.whoami", Arguments: map[string]any{}})
			require.NoError(t, err)
			require.Equal(t, "ignore", res.Content[0].(*mcp.TextContent).Text)
		})
	}
}

// TestLateUpstreamSendsListChanged: an upstream that cannot be reached at
// start is left out of the first listing (which does not wait past its
// failure); when it comes up, retried in the background, the client is
// sent notifications/tools/list_changed and lists its tools.
func TestLateUpstreamSendsListChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flag := filepath.Join(dir, "up")
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs := serveStdioFront(t, startServe(t, dir, childSettings("late", childupstream.UpOnceExists(flag))), client)
	require.Empty(t, listedTools(t, cs))
	require.NoError(t, os.WriteFile(flag, nil, 0o600))
	// The session may also be told of the revision the start built: each
	// notification is followed by a listing, until one has the tools.
	want := prefixed("late.", childupstream.Tools...)
	for {
		select {
		case <-changed:
		case <-time.After(time.Minute): // a failure bound, not a measure
			t.Fatal("no notifications/tools/list_changed after the upstream came up")
		}
		if got := listedTools(t, cs); len(got) == len(want) {
			require.ElementsMatch(t, want, got)
			return
		}
	}
}

// TestServeStdioOpensNoPort: `serve --stdio` with a settings file that
// names an HTTP address listens on nothing.
func TestServeStdioOpensNoPort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "toolgate.yaml")
	require.NoError(t, os.WriteFile(file, []byte("http: 127.0.0.1:0\nledger: memory\nwatch: false\n"), 0o600))
	s, err := config.LoadServe([]string{"--config", file, "--stdio"}, io.Discard)
	require.NoError(t, err)
	g, err := gateway.New(context.Background(), gateway.Config{Serve: *s, Stderr: io.Discard})
	require.NoError(t, err)
	defer func() { require.NoError(t, g.Close()) }()
	require.Nil(t, g.Addr(), "no HTTP listener")

	s, err = config.LoadServe([]string{"--config", file, "--stdio", "--http", "127.0.0.1:0"}, io.Discard)
	require.NoError(t, err)
	g2, err := gateway.New(context.Background(), gateway.Config{Serve: *s, Stderr: io.Discard})
	require.NoError(t, err)
	defer func() { require.NoError(t, g2.Close()) }()
	require.NotNil(t, g2.Addr(), "--http on the command line")
}
