package httpserve_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/server/httpserve"
)

// streamEnd is how an HTTP response's body ended: its status and the
// error its last read returned (nil: EOF).
type streamEnd struct {
	status int
	body   string
	err    error
}

// openStream sends req on a goroutine and reads its whole response; the
// result arrives when the response ends.
func openStream(req *http.Request) <-chan streamEnd {
	done := make(chan streamEnd, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- streamEnd{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- streamEnd{status: resp.StatusCode, body: string(b), err: err}
	}()
	return done
}

// sessionRequest is a request on session id of the 2025-11-25 revision.
func sessionRequest(t *testing.T, ctx context.Context, method, url, id, token, body string) *http.Request {
	t.Helper()
	var rd io.Reader = http.NoBody
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return req
}

func awaitEnd(t *testing.T, c <-chan streamEnd, what string) streamEnd {
	t.Helper()
	select {
	case e := <-c:
		return e
	case <-time.After(time.Minute): // a failure bound only
		t.Fatalf("%s did not end", what)
		return streamEnd{}
	}
}

// expiryFixture is a fixture whose slow call is released by release or
// at the latest when the test ends, and a JWT issuer and the verifier
// that trusts it.
func expiryFixture(t *testing.T) (f *fixture, release func(), iss *issuer, v *identity.JWT) {
	t.Helper()
	f = newFixture(t)
	release = sync.OnceFunc(func() { close(f.release) })
	t.Cleanup(release) // a failing test does not leave the slow call hanging
	iss = newIssuer(t)
	v = newJWT(t, identity.Settings{Issuer: testIssuer, JWKS: iss.Path, Resource: testResource})
	return f, release, iss, v
}

// TestSecStreamEndsAtTokenExpiry: the standalone GET stream of a session
// opened with a JWT access token ends by itself when the token expires
// (it would otherwise deliver notifications/tools/list_changed for as long
// as the connection stays open); a tools/call accepted with that token
// before then runs to its end, and a tokens-file token (no expiry) keeps
// its stream.
func TestSecStreamEndsAtTokenExpiry(t *testing.T) {
	t.Parallel()
	f, release, iss, v := expiryFixture(t)
	ts := startServer(t, httpserve.Options{Server: f.server, Tokens: testTokens(t), JWT: v})
	url := ts.URL + "/mcp"
	short := iss.tokenUntil(t, time.Now().Add(2*time.Second), "dana", testResource)

	// alice's (tokens file) stream, for contrast.
	aliceCtx, stopAlice := context.WithCancel(t.Context())
	defer stopAlice()
	aliceID := initSession(t, url, "2025-11-25", aliceToken)
	alice := openStream(sessionRequest(t, aliceCtx, http.MethodGet, url, aliceID, aliceToken, ""))

	id := initSession(t, url, "2025-11-25", short)
	call := openStream(sessionRequest(t, t.Context(), http.MethodPost, url, id, short,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
	<-f.started
	stream := openStream(sessionRequest(t, t.Context(), http.MethodGet, url, id, short, ""))

	end := awaitEnd(t, stream, "the GET stream of an expiring token")
	require.NoError(t, end.err, "the stream ends cleanly: the client sees EOF")
	assert.Equal(t, http.StatusOK, end.status)

	select {
	case e := <-alice:
		t.Fatalf("a tokens-file token's stream ended too (status %d, %v)", e.status, e.err)
	default:
	}

	// The call accepted with the token before it expired is not cut.
	release()
	got := awaitEnd(t, call, "the slow call")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusOK, got.status)
	assert.Contains(t, got.body, `"slept"`)
	assert.NotContains(t, got.body, `"isError":true`)
}

// listenWatch is a RoundTripper with a bearer token that reports when the
// response to a subscriptions/listen request ends.
type listenWatch struct {
	token string
	ended chan error
	seen  atomic.Bool
}

func (l *listenWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+l.token)
	listen := false
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(b))
		listen = bytes.Contains(b, []byte(`"subscriptions/listen"`)) && l.seen.CompareAndSwap(false, true)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !listen {
		return resp, err
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, ended: l.ended}
	return resp, nil
}

type watchedBody struct {
	io.ReadCloser
	ended chan error
	once  atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.once.CompareAndSwap(false, true) {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		b.ended <- err
	}
	return n, err
}

// TestSecListenEndsAtTokenExpiry: under the 2026-07-28 revision, the
// subscriptions/listen stream opened with a JWT access token ends when the
// token expires; a tools/call accepted with it before then runs to its end.
func TestSecListenEndsAtTokenExpiry(t *testing.T) {
	t.Parallel()
	f, release, iss, v := expiryFixture(t)
	ts := startServer(t, httpserve.Options{Server: f.server, JWT: v})
	watch := &listenWatch{token: iss.tokenUntil(t, time.Now().Add(2*time.Second), "dana", testResource), ended: make(chan error, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "test"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: watch}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
	require.True(t, watch.seen.Load(), "the client opened a subscriptions/listen stream")

	type result struct {
		res *mcp.CallToolResult
		err error
	}
	call := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow"})
		call <- result{res, err}
	}()
	<-f.started

	select {
	case err := <-watch.ended:
		require.NoError(t, err, "the listen stream ends cleanly: the client sees EOF")
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("the subscriptions/listen stream of an expiring token did not end")
	}

	release()
	select {
	case got := <-call:
		require.NoError(t, got.err)
		require.False(t, got.res.IsError)
		assert.Equal(t, "slept", got.res.Content[0].(*mcp.TextContent).Text)
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("the slow call did not end")
	}
}
