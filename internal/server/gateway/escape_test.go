package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// bodies records the bodies of the HTTP requests that carry a tools/call.
type bodies struct {
	mu  sync.Mutex
	got []string
}

func (b *bodies) add(body []byte) {
	if bytes.Contains(body, []byte(`"tools/call"`)) {
		b.mu.Lock()
		b.got = append(b.got, string(body))
		b.mu.Unlock()
	}
}

func (b *bodies) last(t *testing.T) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NotEmpty(t, b.got, "no tools/call received")
	return b.got[len(b.got)-1]
}

// recordingUpstream serves one tool, echo, over streamable HTTP and
// records the bytes of every tools/call it receives.
func recordingUpstream(t *testing.T) (string, *bodies) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "recording", Version: "v0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"obj":{"type":"object"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	rec := &bodies{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		rec.add(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, rec
}

// rewriting is a client transport that applies edit to the body of a
// tools/call request before sending it.
type rewriting struct {
	next http.RoundTripper
	edit func(string) string
}

func (rw rewriting) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || rw.edit == nil {
		return rw.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(body, []byte(`"tools/call"`)) {
		body = []byte(rw.edit(string(body)))
	}
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return rw.next.RoundTrip(r)
}

// TestHTMLCharactersReachTheUpstreamAsSent (docs/contract.md §3): <, > and
// & in a call's arguments (values and keys of values) and in the _meta entry that
// goes upstream (the progress token) reach the upstream spelled as the
// client sent them, not as \u003c, \u003e, \u0026, whether the wire layer
// splices the request (the common shape) or decodes and encodes it (a
// _meta key with an escape takes that path).
func TestHTMLCharactersReachTheUpstreamAsSent(t *testing.T) {
	t.Parallel()
	upURL, rec := recordingUpstream(t)
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	dir := t.TempDir()
	reg, pol := bundledCopy(t, dir, `  "upstream:up": { roles: [admin] }`+"\n")
	watch := false
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, admin),
			Upstreams: []upstream.Settings{{Name: "up", URL: upURL, Import: true}}, Ledger: "memory",
			Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: io.Discard,
	})
	for _, tc := range []struct {
		name string
		edit func(string) string
	}{
		{"spliced", nil},
		{"decoded and encoded again", func(s string) string {
			return strings.Replace(s, `"_meta":{`, `"_meta":{"\u0078":1,`, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			client := mcp.NewClient(&mcp.Implementation{Name: "escape-test", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.url, DisableStandaloneSSE: true,
				HTTPClient: &http.Client{Transport: rewriting{next: mcptest.Bearer{Token: tokenFor(admin), Next: tr}, edit: tc.edit}}}, &mcp.ClientSessionOptions{ProtocolVersion: protocols[0]})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "up.echo",
				Arguments: map[string]any{"text": "<b>&amp;</b>", "obj": map[string]any{"a&b": "x>y"}},
				Meta:      mcp.Meta{"progressToken": "<&>"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%s", res.Content[0].(*mcp.TextContent).Text)
			got := rec.last(t)
			for _, want := range []string{`"text":"<b>&amp;</b>"`, `"a&b":"x>y"`, `"progressToken":"<&>"`} {
				assert.Contains(t, got, want)
			}
			for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
				assert.NotContains(t, got, esc)
			}
		})
	}
}
