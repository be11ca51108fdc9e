package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/testkit/childupstream"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// upstreamBin is the test upstream built once for every test.
var upstreamBin string

func TestMain(m *testing.M) {
	childupstream.Main() // a child upstream, when the command line names one
	var err error
	upstreamBin, err = proctest.Binary("./internal/testkit/testserver/cmd/upstreamtest")
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the test upstream: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		// Every test closed its pool: no session, reader or closer remains.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// stdioConfig is an upstream running the test binary.
func stdioConfig(name string) Config {
	return Config{Name: name, Command: []string{upstreamBin}, Timeout: 5 * time.Second}
}

// httpConfig is an upstream served in-process over streamable HTTP.
func httpConfig(t *testing.T, name string) (Config, *httptest.Server) {
	srv := testserver.New(testserver.Options{})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return Config{Name: name, URL: ts.URL, Timeout: 5 * time.Second}, ts
}

// memoryConfig is an upstream in the same process, over in-memory
// transports: a fresh server session for every connection.
func memoryConfig(name string) Config {
	srv := testserver.New(testserver.Options{})
	return Config{Name: name, Timeout: 5 * time.Second, Transport: func() mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			panic(err)
		}
		return ct
	}}
}

func newPool(t testing.TB, cfgs ...Config) *Pool {
	t.Helper()
	p, err := NewPool(cfgs, &Options{TerminateGrace: 500 * time.Millisecond, Stderr: testWriter{t}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("upstream stderr: %s", b)
	return len(b), nil
}

// call resolves method in set, binds args (in name order) and runs it.
func call(ctx context.Context, t *testing.T, set methods.Set, method string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	m, ok := set.Method(method)
	require.True(t, ok, "method %s resolves", method)
	var bound []toolcall.Arg
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range args {
			if !yield(k) {
				return
			}
		}
	}) {
		b, err := json.Marshal(args[name])
		require.NoError(t, err)
		bound = append(bound, toolcall.Arg{Name: name, Value: b})
	}
	inv, err := m.Bind(bound)
	require.NoError(t, err)
	return inv(ctx)
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotNil(t, res)
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "text content")
	return tc.Text
}

// pid is the process id of name's current stdio session; 0 without one.
func (p *Pool) pid(name string) int {
	c := p.conns[name]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil || c.sess.cmd == nil || c.sess.cmd.Process == nil {
		return 0
	}
	return c.sess.cmd.Process.Pid
}
