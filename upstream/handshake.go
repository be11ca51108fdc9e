package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How toolgate opens a session to an upstream (docs/contract.md §19,
// "Handshake"). The go-sdk's client, at its default revision, sends
// server/discover first and waits for its answer; a server that ignores
// requests it does not know before initialize (as the Python SDK does)
// never answers, and the session never opens. So toolgate asks first
// itself, in an exchange of its own bounded by DiscoverWait: a server that
// answers server/discover gets the go-sdk's handshake at the revision
// wanted; one that answers it with an error, or not within DiscoverWait,
// gets initialize at the newest revision that has it. The outcome is
// remembered per upstream, so only its first session waits.
//
// Over stdio (and a Config.Transport) the exchange runs on the
// connection the session then uses: nothing wraps the connection the
// session reads, so closing the session never waits for the probe. Over
// HTTP it is a request of its own, outside any session.

// DiscoverWait bounds how long toolgate waits for the answer to its first
// server/discover before it goes on with initialize.
const DiscoverWait = time.Second

const (
	// discoverRevision is the first revision opened with server/discover;
	// legacyRevision the newest opened with initialize.
	discoverRevision = "2026-07-28"
	newestInitialize = "2025-11-25"
	methodDiscover   = "server/discover"
	// probeID is the JSON-RPC id of the probe: a string, never one of the
	// session's own (numbers from 1).
	probeID = "toolgate-discover"
)

// handshakeKind is what an upstream's first server/discover showed.
type handshakeKind int

const (
	handshakeUnknown  handshakeKind = iota
	handshakeDiscover               // it answered server/discover
	handshakeLegacy                 // it did not (an error, or no answer within DiscoverWait)
)

// handshakeMemo remembers an upstream's handshakeKind.
type handshakeMemo struct {
	mu   sync.Mutex
	kind handshakeKind
}

func (m *handshakeMemo) get() handshakeKind {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kind
}

func (m *handshakeMemo) set(k handshakeKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kind = k
}

// dialer makes a fresh transport to the upstream, and the process it
// will start (stdio), if any.
type dialer func() (mcp.Transport, *exec.Cmd, error)

// connectClient opens a session of client over a transport of dial.
// version is the revision wanted ("" the go-sdk's newest); a revision
// before server/discover is opened with initialize as it always was. For
// the newer ones, the upstream is asked server/discover first (see above),
// unless its answer is known.
//
// A server that only starts reading after DiscoverWait (an npx server
// still starting) reads toolgate's server/discover and then its
// initialize: a go-sdk server answers the first and refuses the second
// as a duplicate. Its answer to server/discover still says what it is:
// the session is then opened again, with the go-sdk's handshake, on the
// same connection (see lateDiscover), so that the server is started once.
//
// A process it started is killed when it fails.
func (c *conn) connectClient(ctx context.Context, client *mcp.Client, dial dialer, version string) (_ *mcp.ClientSession, _ *exec.Cmd, err error) {
	t, cmd, err := dial()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		// The SDK closes what it opened, except on rare paths; make sure
		// no child outlives a failed attempt.
		if err != nil && cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	}()
	if version != "" && version < discoverRevision {
		cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
		return cs, cmd, err
	}
	kind := c.handshake.get()
	var (
		late *lateDiscover // the probe's connection, when its server/discover went unanswered
		view *lateView     // the view of late the session opens on
	)
	switch {
	case kind != handshakeUnknown:
	case c.cfg.URL != "":
		kind = c.probeHTTP(ctx, t)
		c.handshake.set(kind)
	default:
		conn, err := t.Connect(ctx)
		if err != nil {
			return nil, cmd, err
		}
		kind, err = probe(ctx, conn)
		if err != nil {
			_ = conn.Close()
			return nil, cmd, err
		}
		c.handshake.set(kind)
		if kind == handshakeLegacy {
			late = newLateDiscover(conn)
			view = late.view()
			t = &connected{conn: view}
		} else {
			t = &connected{conn: conn}
		}
	}
	opts := func(version string) *mcp.ClientSessionOptions {
		if version == "" {
			return nil
		}
		return &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	if kind == handshakeLegacy {
		cs, err := client.Connect(ctx, t, opts(newestInitialize))
		if late == nil {
			return cs, cmd, err
		}
		if err == nil {
			late.keep(view)
			return cs, cmd, nil
		}
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || !late.answered(ctx) {
			late.close()
			return nil, cmd, err
		}
		// It answered server/discover after all, and refused initialize:
		// the go-sdk's handshake, on the connection it is reading.
		c.handshake.set(handshakeDiscover)
		view = late.view()
		kind, t = handshakeDiscover, &connected{conn: view}
	}
	cs, err := client.Connect(ctx, t, opts(version))
	switch {
	case err != nil && kind == handshakeDiscover:
		c.handshake.set(handshakeUnknown) // it may have been replaced by another server: ask again next time
		if late != nil {
			late.close()
		}
	case late != nil:
		late.keep(view)
	}
	return cs, cmd, err
}

// probeHTTP asks an HTTP upstream server/discover in a connection of its
// own, closed after.
func (c *conn) probeHTTP(ctx context.Context, t mcp.Transport) handshakeKind {
	ctx, cancel := context.WithTimeout(ctx, DiscoverWait)
	defer cancel()
	conn, err := t.Connect(ctx)
	if err != nil {
		return handshakeLegacy
	}
	defer func() { _ = conn.Close() }()
	kind, err := probe(ctx, conn)
	if err != nil {
		return handshakeLegacy // the HTTP request failed: a server without server/discover
	}
	return kind
}

// probe sends server/discover on conn and reads until its answer,
// DiscoverWait, or ctx. Messages before the answer are dropped (a server
// has nothing to say before it is initialized). An error is a connection
// that broke: the upstream exited, or the request could not be sent.
func probe(ctx context.Context, conn mcp.Connection) (handshakeKind, error) {
	ctx, cancel := context.WithTimeout(ctx, DiscoverWait)
	defer cancel()
	req, err := discoverRequest()
	if err != nil {
		return handshakeUnknown, err
	}
	if err := conn.Write(ctx, req); err != nil {
		if ctx.Err() != nil {
			return handshakeLegacy, nil
		}
		return handshakeUnknown, fmt.Errorf("server/discover: %w", err)
	}
	for {
		msg, err := conn.Read(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return handshakeLegacy, nil // no answer in time: go on with initialize
		case errors.Is(err, io.EOF):
			return handshakeUnknown, fmt.Errorf("the upstream closed its end before its first answer (did its command exit? its stderr says why): %w", err)
		case err != nil:
			return handshakeUnknown, fmt.Errorf("waiting for the answer to server/discover: %w", err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != req.ID {
			continue
		}
		if resp.Error != nil {
			return handshakeLegacy, nil
		}
		return handshakeDiscover, nil
	}
}

// discoverRequest is the server/discover the go-sdk's client sends, with
// toolgate's own revision, name and (no) capabilities: nothing of any
// client's.
func discoverRequest() (*jsonrpc.Request, error) {
	id, err := jsonrpc.MakeID(probeID)
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    discoverRevision,
		mcp.MetaKeyClientInfo:         clientInfo,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}})
	if err != nil {
		return nil, err
	}
	return &jsonrpc.Request{ID: id, Method: methodDiscover, Params: params}, nil
}

// clientInfo is how toolgate names itself to upstreams.
var clientInfo = &mcp.Implementation{Name: "toolgate", Version: "v1"}

// connected is a transport whose one connection is already open: the
// session takes over the connection probe used.
type connected struct {
	mu   sync.Mutex
	conn mcp.Connection
}

func (t *connected) Connect(context.Context) (mcp.Connection, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == nil {
		return nil, errors.New("upstream: connection already taken")
	}
	c := t.conn
	t.conn = nil
	return c, nil
}

// lateDiscover is the connection of a session opened with initialize
// after its server/discover went unanswered in time: a server still
// starting (an npx server) may read both, answer server/discover and
// refuse initialize as a duplicate. It lets a second session, opened with
// the go-sdk's handshake, take the connection over from the first, which
// failed, without closing it (closing a stdio connection ends the
// process): one reader takes the connection's messages and hands each to
// the session reading now (view); the answer to the probe is kept apart
// (answered).
type lateDiscover struct {
	under mcp.Connection

	msgs    chan jsonrpc.Message
	dead    chan struct{} // closed once the connection has failed (err)
	err     error
	probeOK chan struct{} // closed when the answer to the probe came
	stop    chan struct{} // closed when the connection is closed
	once    sync.Once

	mu    sync.Mutex
	owner *lateView // the view of the session that holds the connection
}

func newLateDiscover(conn mcp.Connection) *lateDiscover {
	l := &lateDiscover{under: conn, msgs: make(chan jsonrpc.Message), dead: make(chan struct{}),
		probeOK: make(chan struct{}), stop: make(chan struct{})}
	go l.pump()
	return l
}

// pump reads the connection until it fails or is closed.
func (l *lateDiscover) pump() {
	id, _ := jsonrpc.MakeID(probeID)
	answered := false
	for {
		msg, err := l.under.Read(context.Background())
		if err != nil {
			l.err = err
			close(l.dead)
			return
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == id {
			if !answered && resp.Error == nil {
				answered = true
				close(l.probeOK)
			}
			continue
		}
		select {
		case l.msgs <- msg:
		case <-l.stop:
			return
		}
	}
}

// answered reports whether the server answered the probe, waiting for
// its answer up to DiscoverWait (a go-sdk server may answer initialize
// before it).
func (l *lateDiscover) answered(ctx context.Context) bool {
	t := time.NewTimer(DiscoverWait)
	defer t.Stop()
	select {
	case <-l.probeOK:
		return true
	case <-l.dead:
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-l.probeOK:
		return true
	default:
		return false
	}
}

// view is a connection for the next session to read.
func (l *lateDiscover) view() *lateView {
	return &lateView{l: l, done: make(chan struct{})}
}

// keep hands the connection to the session that opened on v: closing v
// closes the connection (at once, if v is closed already).
func (l *lateDiscover) keep(v *lateView) {
	l.mu.Lock()
	l.owner = v
	l.mu.Unlock()
	if v.closed.Load() {
		l.close()
	}
}

// close closes the connection.
func (l *lateDiscover) close() {
	l.once.Do(func() {
		close(l.stop)
		_ = l.under.Close()
	})
}

// lateView is one session's view of a lateDiscover's connection: closing
// it ends its reads, and closes the connection only when the connection
// is kept for its session (a failed handshake's session closes its view,
// not the process).
type lateView struct {
	l      *lateDiscover
	once   sync.Once
	done   chan struct{}
	closed atomic.Bool
}

func (v *lateView) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-v.done:
		return nil, io.EOF
	default:
	}
	select {
	case msg := <-v.l.msgs:
		return msg, nil
	case <-v.l.dead:
		return nil, v.l.err
	case <-v.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (v *lateView) Write(ctx context.Context, msg jsonrpc.Message) error {
	if v.closed.Load() {
		return io.ErrClosedPipe
	}
	return v.l.under.Write(ctx, msg)
}

func (v *lateView) Close() error {
	v.once.Do(func() {
		v.closed.Store(true)
		close(v.done)
	})
	v.l.mu.Lock()
	owner := v.l.owner == v
	v.l.mu.Unlock()
	if owner {
		v.l.close()
	}
	return nil
}

func (v *lateView) SessionID() string { return v.l.under.SessionID() }
