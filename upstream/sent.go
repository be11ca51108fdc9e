package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/backend"
	"github.com/toolgate/toolgate/internal/jsonx"
)

// Answers as sent (docs/contract.md §19): the go-sdk client decodes an
// upstream's result into its typed struct, which loses what the struct
// does not hold (unknown members, isError false, a _meta's spelling) and
// adds what it always writes (ttlMs and cacheScope of a resources/read
// result). A request sent with a context from withSent has the raw JSON
// of its result kept as it arrived: over stdio (and an embedder's
// Transport) read off the connection, over streamable HTTP off the
// response body (JSON or SSE) of the request's own POST. The caller hands
// it on with mcpadapter.KeepSent.

type sentKey struct{}

// sentResult is where the raw result of one request is kept.
type sentResult struct {
	raw atomic.Pointer[json.RawMessage]
	// ctx is the context withSent was given: a JSON-RPC error the upstream
	// answers the request with is handed to the adapter's answer as it
	// arrives (backend.KeepSentError), whoever sent the request.
	ctx context.Context
}

// withSent returns ctx marked so that the result of the request sent with
// it is kept in the returned sentResult.
func withSent(ctx context.Context) (context.Context, *sentResult) {
	s := &sentResult{ctx: ctx}
	return context.WithValue(ctx, sentKey{}, s), s
}

// keepError hands the JSON-RPC error the upstream answered the request
// with, as it sent it, to the adapter's answer: a tools/call it fails is
// answered with it (docs/contract.md §19).
func (s *sentResult) keepError(e *jsonrpc.Error) {
	if e != nil {
		backend.KeepSentError(s.ctx, &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: bytes.Clone(e.Data)})
	}
}

func sentOf(ctx context.Context) *sentResult {
	s, _ := ctx.Value(sentKey{}).(*sentResult)
	return s
}

// keep hands the raw result kept for res on to the adapter's answer
// (nothing when none was kept).
func (s *sentResult) keep(ctx context.Context, res any) {
	if raw := s.raw.Load(); raw != nil && res != nil {
		backend.KeepSent(ctx, res, *raw)
	}
}

// keepWith is keep, the member name of the raw result set to value (a
// string): the result as sent, but for what toolgate changed in it.
func (s *sentResult) keepWith(ctx context.Context, res any, name, value string) {
	raw := s.raw.Load()
	if raw == nil || res == nil {
		return
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(*raw, &m) != nil {
		return
	}
	v, err := json.Marshal(value)
	if err != nil {
		return
	}
	m[name] = v
	if out, err := jsonx.Marshal(m); err == nil {
		backend.KeepSent(ctx, res, out)
	}
}

// sentTransport keeps the raw results of a connection's requests.
type sentTransport struct{ mcp.Transport }

func (t sentTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sentConn{Connection: c}, nil
}

type sentConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]*sentResult
}

func (c *sentConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
		if s := sentOf(ctx); s != nil {
			c.mu.Lock()
			if c.pending == nil {
				c.pending = map[jsonrpc.ID]*sentResult{}
			}
			c.pending[r.ID] = s
			c.mu.Unlock()
			err := c.Connection.Write(ctx, msg)
			if err != nil {
				c.mu.Lock()
				delete(c.pending, r.ID)
				c.mu.Unlock()
			}
			return err
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *sentConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		s := c.pending[r.ID]
		delete(c.pending, r.ID)
		c.mu.Unlock()
		var wire *jsonrpc.Error
		switch {
		case s == nil:
		case r.Error == nil && len(r.Result) > 0:
			raw := json.RawMessage(bytes.Clone(r.Result))
			s.raw.Store(&raw)
		case errors.As(r.Error, &wire):
			s.keepError(wire)
		}
	}
	return m, err
}

// sentClient is client (nil: http.DefaultClient) with the raw results of
// the requests sent with a withSent context kept, and, when in is not
// nil, the progress and log notifications of its response streams counted
// into in as the SDK reads them.
func sentClient(client *http.Client, in *inbox) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}
	out := *client
	next := out.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	out.Transport = sentRoundTripper{next: next, in: in}
	return &out
}

type sentRoundTripper struct {
	next http.RoundTripper
	in   *inbox
}

func (rt sentRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	s := sentOf(r.Context())
	if (s == nil && rt.in == nil) || (r.Method != http.MethodPost && r.Method != http.MethodGet) {
		return rt.next.RoundTrip(r)
	}
	var id any // a stream resumed by GET carries no result of a kept request
	if s != nil && r.Method == http.MethodPost && r.GetBody != nil {
		id = callID(r)
	}
	resp, err := rt.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Body == nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sse := ct == "text/event-stream"
	switch {
	case id != nil:
	case sse && rt.in != nil:
		s = nil // count only
	default:
		return resp, nil
	}
	resp.Body = &sentBody{ReadCloser: resp.Body, id: id, sse: sse, s: s, in: rt.in}
	return resp, nil
}

// callID is the id of the JSON-RPC call r's body carries, decoded; nil
// when it carries none.
func callID(r *http.Request) any {
	body, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var m struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if err := json.NewDecoder(body).Decode(&m); err != nil || m.Method == "" {
		return nil
	}
	switch m.ID.(type) {
	case string, float64:
		return m.ID
	}
	return nil
}

// sameID compares two decoded ids (never two values == would panic on).
func sameID(got, want any) bool {
	switch g := got.(type) {
	case string:
		w, ok := want.(string)
		return ok && g == w
	case float64:
		w, ok := want.(float64)
		return ok && g == w
	}
	return false
}

// sentBody reads a response body for the SDK, keeps the raw result of
// the response to id as it goes by (s not nil), and counts the progress
// and log notifications before it into in (not nil). The SDK reads an
// event off the body before it handles it, so a notification is counted
// before the result after it reaches its caller.
type sentBody struct {
	io.ReadCloser
	id   any
	sse  bool
	s    *sentResult
	in   *inbox
	buf  []byte
	done bool
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.done {
		return n, err
	}
	b.buf = append(b.buf, p[:n]...)
	if b.sse {
		b.events()
	} else if err == io.EOF {
		b.message(b.buf)
		b.done, b.buf = true, nil
	}
	return n, err
}

// events reads the complete events of b.buf.
func (b *sentBody) events() {
	for !b.done {
		b.buf = bytes.ReplaceAll(b.buf, []byte("\r\n"), []byte("\n"))
		i := bytes.Index(b.buf, []byte("\n\n"))
		if i < 0 {
			return
		}
		var data []byte
		for line := range bytes.SplitSeq(b.buf[:i], []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
		}
		b.buf = b.buf[i+2:]
		if len(data) > 0 && b.message(data) {
			b.done, b.buf = true, nil
		}
	}
}

// message keeps the result of msg when it is the response to b.id, and
// reports whether it was; it counts msg into b.in when it is a progress or
// log notification.
func (b *sentBody) message(msg []byte) bool {
	var m struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return false
	}
	if m.Method != nil {
		if b.in != nil && m.ID == nil && (*m.Method == methodProgress || *m.Method == methodLogMessage) {
			b.in.gotRead()
		}
		return false
	}
	if b.s == nil || !sameID(m.ID, b.id) {
		return false
	}
	switch {
	case len(m.Result) > 0:
		raw := m.Result
		b.s.raw.Store(&raw)
	case m.Error != nil:
		b.s.keepError(m.Error)
	}
	return true
}
