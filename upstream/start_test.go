package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/childupstream"
)

// toolNames are the names of the upstream's listed tools.
func (p *Pool) toolNames(t *testing.T, name string) []string {
	t.Helper()
	tools, err := p.conns[name].listed(t.Context())
	require.NoError(t, err)
	var out []string
	for _, tl := range tools.tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestHandshakeWithServerIgnoringUnknownRequests: a stdio server that
// ignores requests it does not know before initialize (as the Python SDK
// does) is reached: toolgate's server/discover goes unanswered, and
// initialize follows within a second. Its next session does not wait.
func TestHandshakeWithServerIgnoringUnknownRequests(t *testing.T) {
	t.Parallel()
	p := newPool(t, Config{Name: "py", Command: childupstream.IgnoresUnknown(), Timeout: 30 * time.Second, ConnectTimeout: 30 * time.Second})
	require.NoError(t, p.Connect(t.Context()))
	require.ElementsMatch(t, childupstream.Tools, p.toolNames(t, "py"))
	require.Equal(t, handshakeLegacy, p.conns["py"].handshake.get())
	res, err := call(t.Context(), t, p, "upstream:py/echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	require.Equal(t, "hi", textOf(t, res))
}

// TestHandshakeWithDiscoveringServer: a server that answers
// server/discover is opened with the go-sdk's handshake at its newest
// revision, over a transport of the process's own (as stdio: the probe
// runs on the session's connection) and over HTTP.
func TestHandshakeWithDiscoveringServer(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return childupstream.NewServer("web") }, nil))
	t.Cleanup(ts.Close)
	srv := childupstream.NewServer("go")
	p := newPool(t,
		Config{Name: "go", Timeout: 30 * time.Second, Transport: func() mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(context.Background(), st, nil); err != nil {
				panic(err)
			}
			return ct
		}},
		Config{Name: "web", URL: ts.URL, Timeout: 30 * time.Second})
	require.NoError(t, p.Connect(t.Context()))
	for _, name := range []string{"go", "web"} {
		require.ElementsMatch(t, childupstream.Tools, p.toolNames(t, name), name)
		require.Equal(t, handshakeDiscover, p.conns[name].handshake.get(), name)
	}
	c := p.conns["go"]
	c.mu.Lock()
	ir := c.sess.cs.InitializeResult()
	c.mu.Unlock()
	require.Equal(t, discoverRevision, ir.ProtocolVersion)
}

// TestHandshakeOverHTTPWithServerIgnoringDiscover: an HTTP server that
// accepts server/discover without ever answering it is reached with
// initialize.
func TestHandshakeOverHTTPWithServerIgnoringDiscover(t *testing.T) {
	t.Parallel()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return childupstream.NewServer("web") }, nil)
	var mu sync.Mutex
	var methods []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(b, &m)
			mu.Lock()
			methods = append(methods, m.Method)
			mu.Unlock()
			if m.Method == methodDiscover {
				<-r.Context().Done() // never answered
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	p := newPool(t, Config{Name: "web", URL: ts.URL, Timeout: 30 * time.Second})
	require.NoError(t, p.Connect(t.Context()))
	require.ElementsMatch(t, childupstream.Tools, p.toolNames(t, "web"))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{methodDiscover, "initialize"}, methods[:2])
}

// TestProbeDropsWhatComesBeforeItsAnswer: the probe reads past messages
// that are not its answer, and takes an error answer as no
// server/discover.
func TestProbeDropsWhatComesBeforeItsAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer *jsonrpc.Response
		want   handshakeKind
	}{
		{"result", &jsonrpc.Response{Result: json.RawMessage(`{}`)}, handshakeDiscover},
		{"error", &jsonrpc.Response{Error: &jsonrpc.Error{Code: -32601, Message: "method not found"}}, handshakeLegacy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ct, st := mcp.NewInMemoryTransports()
			server, err := st.Connect(t.Context())
			require.NoError(t, err)
			client, err := ct.Connect(t.Context())
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
			go func() {
				m, err := server.Read(context.Background())
				if err != nil {
					return
				}
				req := m.(*jsonrpc.Request)
				other, _ := jsonrpc.MakeID(float64(7))
				_ = server.Write(context.Background(), &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"starting"}`)})
				_ = server.Write(context.Background(), &jsonrpc.Response{ID: other, Result: json.RawMessage(`{}`)})
				ans := *tc.answer
				ans.ID = req.ID
				_ = server.Write(context.Background(), &ans)
			}()
			kind, err := probe(t.Context(), client)
			require.NoError(t, err)
			require.Equal(t, tc.want, kind)
		})
	}
}

// TestConnectTimeoutSaysWhatItWaitedFor: an upstream that does not answer
// initialize within its connect timeout fails with an error that says what
// toolgate waited for, how long, the setting to raise and, for npx, why it
// may be slow; the process is not killed before.
func TestConnectTimeoutSaysWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	p := newPool(t, Config{Name: "slow", Command: childupstream.Slow(time.Minute), ConnectTimeout: 300 * time.Millisecond})
	err := p.Connect(t.Context())
	require.ErrorIs(t, err, ErrConnectTimeout)
	require.ErrorContains(t, err, "waited 300ms for the upstream's answer to initialize")
	require.ErrorContains(t, err, "raise its timeout setting")
	require.ErrorContains(t, err, "run it by hand")

	c := &conn{cfg: Config{Name: "files", Command: []string{"/usr/bin/npx", "-y", "@modelcontextprotocol/server-filesystem"}}}
	require.Contains(t, c.hint(true), "npx may still be downloading the server")
}

// TestSlowUpstreamConnects: a server that takes 3 s before it reads stdin
// (a first `npx -y` run) is connected with the default connect timeout.
func TestSlowUpstreamConnects(t *testing.T) {
	t.Parallel()
	p := newPool(t, Config{Name: "slow", Command: childupstream.Slow(3 * time.Second), Timeout: 30 * time.Second})
	require.NoError(t, p.Connect(t.Context()))
	require.ElementsMatch(t, childupstream.Tools, p.toolNames(t, "slow"))
}

// TestReconnectsInTheBackground: an upstream that could not be reached is
// tried again without any call, and its coming up is reported
// (Options.ToolsChanged).
func TestReconnectsInTheBackground(t *testing.T) {
	t.Parallel()
	flag := filepath.Join(t.TempDir(), "up")
	changed := make(chan string, 4)
	p, err := NewPool([]Config{{Name: "late", Command: childupstream.UpOnceExists(flag), Timeout: 30 * time.Second}},
		&Options{TerminateGrace: 500 * time.Millisecond, Stderr: testWriter{t}, ToolsChanged: func(name string) { changed <- name }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	err = p.Connect(t.Context())
	require.Error(t, err)
	require.ErrorContains(t, err, "run the command by hand")
	require.NoError(t, os.WriteFile(flag, nil, 0o600))
	select {
	case name := <-changed:
		require.Equal(t, "late", name)
	case <-time.After(time.Minute): // a failure bound, not a measure
		t.Fatal("the upstream was not reconnected in the background")
	}
	require.ElementsMatch(t, childupstream.Tools, p.toolNames(t, "late"))
}

// TestUpOnlyConnectsNothing: under UpOnly an upstream that is not up
// contributes nothing and is not dialed.
func TestUpOnlyConnectsNothing(t *testing.T) {
	t.Parallel()
	p := newPool(t, Config{Name: "m", Import: true, Transport: func() mcp.Transport { panic("dialed") }})
	rows, err := p.Import(UpOnly(t.Context()))
	require.NoError(t, err)
	require.Empty(t, rows)
	require.Empty(t, p.ImportedPrompts(UpOnly(t.Context())))
}
