package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
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
// as a duplicate. That session is lost; a second one, started with
// initialize alone, is opened in its place, within the same bound.
func (c *conn) connectClient(ctx context.Context, client *mcp.Client, dial dialer, version string) (*mcp.ClientSession, *exec.Cmd, error) {
	cs, cmd, unanswered, err := c.connectOnce(ctx, client, dial, version)
	var rpcErr *jsonrpc.Error
	if err != nil && unanswered && errors.As(err, &rpcErr) && ctx.Err() == nil {
		cs, cmd, _, err = c.connectOnce(ctx, client, dial, version)
	}
	return cs, cmd, err
}

// connectOnce is one attempt of connectClient; unanswered reports that
// its server/discover went unanswered. A process it started is killed
// when it fails.
func (c *conn) connectOnce(ctx context.Context, client *mcp.Client, dial dialer, version string) (_ *mcp.ClientSession, _ *exec.Cmd, unanswered bool, err error) {
	t, cmd, err := dial()
	if err != nil {
		return nil, nil, false, err
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
		return cs, cmd, false, err
	}
	kind := c.handshake.get()
	switch {
	case kind != handshakeUnknown:
	case c.cfg.URL != "":
		kind = c.probeHTTP(ctx, t)
		c.handshake.set(kind)
	default:
		conn, err := t.Connect(ctx)
		if err != nil {
			return nil, cmd, false, err
		}
		kind, err = probe(ctx, conn)
		if err != nil {
			_ = conn.Close()
			return nil, cmd, false, err
		}
		c.handshake.set(kind)
		unanswered = kind == handshakeLegacy
		t = &connected{conn: conn}
	}
	if kind == handshakeLegacy {
		version = newestInitialize
	}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, t, opts)
	if err != nil && kind == handshakeDiscover {
		c.handshake.set(handshakeUnknown) // it may have been replaced by another server: ask again next time
	}
	return cs, cmd, unanswered, err
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
