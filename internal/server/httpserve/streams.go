package httpserve

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Defaults of the stream limits in Options (docs/contract.md §11).
const (
	DefaultMaxStreamsPerCaller  = 8
	DefaultMaxStreamsPerAddress = 64
)

// streamShareNum/streamShareDen is the share of Options.MaxConnections
// that streams may hold at once; the rest is kept for plain requests
// (a health check, an operator's call), which end in bounded time.
const streamShareNum, streamShareDen = 3, 4

// Errors of OpenStream, for errors.Is.
var (
	// ErrStreamNobody: a stream needs a signed-in caller (nobody has no
	// tools whose listing could change, and costs nothing to be).
	ErrStreamNobody = errors.New("a stream needs a signed-in caller")
	// ErrStreamsPerCaller: the caller has Options.MaxStreamsPerCaller
	// streams open.
	ErrStreamsPerCaller = errors.New("too many streams for this caller")
	// ErrStreamsPerAddress: the remote address has
	// Options.MaxStreamsPerAddress streams open.
	ErrStreamsPerAddress = errors.New("too many streams from this address")
)

// streamSet keeps account of the long-lived responses open on a Server
// (a session's GET /mcp, subscriptions/listen, the console's event
// streams): per owner, per remote address, and in the order they opened,
// so that the oldest can be closed when streams reach their share of the
// connections. Safe for concurrent use.
type streamSet struct {
	perOwner, perAddr, max int // <= 0: no cap

	mu      sync.Mutex
	order   *list.List // of *openStream, oldest first
	byOwner map[string]int
	byAddr  map[string]int
	closed  uint64 // streams closed to make room (oldest first)

	on func(event string) // Options.OnStream; nil: none
}

func (ss *streamSet) count1(event string) {
	if ss.on != nil {
		ss.on(event)
	}
}

type openStream struct {
	owner, addr string
	conn        net.Conn // nil when unknown (not served by Serve)
	elem        *list.Element
}

func newStreamSet(perOwner, perAddr, max int) *streamSet {
	return &streamSet{perOwner: perOwner, perAddr: perAddr, max: max, order: list.New(), byOwner: map[string]int{}, byAddr: map[string]int{}}
}

// open records a stream of owner ("" is nobody: refused) from addr on
// conn, or refuses it. At the share of streams, the oldest stream's
// connection is closed to make room.
func (ss *streamSet) open(owner, addr string, conn net.Conn) (*openStream, error) {
	if owner == "" {
		ss.count1("nobody")
		return nil, ErrStreamNobody
	}
	ss.mu.Lock()
	if ss.perOwner > 0 && ss.byOwner[owner] >= ss.perOwner {
		ss.mu.Unlock()
		ss.count1("per_caller")
		return nil, ErrStreamsPerCaller
	}
	if ss.perAddr > 0 && ss.byAddr[addr] >= ss.perAddr {
		ss.mu.Unlock()
		ss.count1("per_address")
		return nil, ErrStreamsPerAddress
	}
	var evict net.Conn
	if ss.max > 0 && ss.order.Len() >= ss.max {
		evict = ss.removeLocked(ss.order.Front().Value.(*openStream))
		ss.closed++
	}
	st := &openStream{owner: owner, addr: addr, conn: conn}
	st.elem = ss.order.PushBack(st)
	ss.byOwner[owner]++
	ss.byAddr[addr]++
	ss.mu.Unlock()
	if evict != nil {
		ss.count1("closed_oldest")
		_ = evict.Close()
	}
	return st, nil
}

// release ends st's account; a stream closed to make room was already.
func (ss *streamSet) release(st *openStream) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if st.elem != nil {
		ss.removeLocked(st)
	}
}

func (ss *streamSet) removeLocked(st *openStream) net.Conn {
	ss.order.Remove(st.elem)
	st.elem = nil
	if ss.byOwner[st.owner]--; ss.byOwner[st.owner] <= 0 {
		delete(ss.byOwner, st.owner)
	}
	if ss.byAddr[st.addr]--; ss.byAddr[st.addr] <= 0 {
		delete(ss.byAddr, st.addr)
	}
	return st.conn
}

// closeOldest closes the connection of the oldest stream that has one;
// it reports whether it did.
func (ss *streamSet) closeOldest() bool {
	ss.mu.Lock()
	var c net.Conn
	for e := ss.order.Front(); e != nil; e = e.Next() {
		if st := e.Value.(*openStream); st.conn != nil {
			c = ss.removeLocked(st)
			ss.closed++
			break
		}
	}
	ss.mu.Unlock()
	if c == nil {
		return false
	}
	ss.count1("closed_oldest")
	_ = c.Close()
	return true
}

// count returns the streams open and those closed to make room so far.
func (ss *streamSet) count() (open int, closed uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.order.Len(), ss.closed
}

// connKey carries a request's connection (http.Server.ConnContext), for
// closing a stream's.
type connKey struct{}

// remoteHost is the host of r's remote address (no port): streams are
// capped per host.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ownerKey is the owner (principal.owner) of a request authenticate or
// withCaller let through: "" for nobody.
type ownerKey struct{}

// requestOwner is the owner of r: from the TokenInfo on /mcp, from
// withCaller elsewhere.
func requestOwner(r *http.Request) string {
	if o, ok := r.Context().Value(ownerKey{}).(string); ok {
		return o
	}
	if info, _ := r.Context().Value(tokenInfoKey{}).(*auth.TokenInfo); info != nil {
		return info.UserID
	}
	return ""
}

// OpenStream accounts for a long-lived response to r (Options.Console's
// event streams use it): it returns the function that ends the account,
// or an error saying why the stream is refused (ErrStreamNobody,
// ErrStreamsPerCaller, ErrStreamsPerAddress). At the share of the
// connections streams may hold, the oldest stream is closed to make room.
func (s *Server) OpenStream(r *http.Request) (release func(), err error) {
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	st, err := s.streams.open(requestOwner(r), remoteHost(r), conn)
	if err != nil {
		return nil, err
	}
	return func() { s.streams.release(st) }, nil
}

// refuseStream answers a stream refused by OpenStream: 405 for nobody's
// GET (no standalone stream), 403 for nobody's subscriptions/listen, 429
// with Retry-After over a cap.
func (s *Server) refuseStream(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Info("http: refused a stream", slog.String("remote", r.RemoteAddr), slog.String("path", r.URL.Path), slog.Any("reason", err))
	switch {
	case errors.Is(err, ErrStreamNobody) && r.Method == http.MethodGet:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "Method Not Allowed: "+err.Error(), http.StatusMethodNotAllowed)
	case errors.Is(err, ErrStreamNobody):
		http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
	default:
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		http.Error(w, err.Error(), http.StatusTooManyRequests)
	}
}

// streamRetryAfter is the Retry-After of a stream refused over a cap.
const streamRetryAfter = 30

// streamGate accounts for the streams of /mcp: a session's standalone
// GET and a subscriptions/listen request (read from the body, which
// mcpadapter.WrapHTTP has already read into memory). Other requests go
// through untouched.
func (s *Server) streamGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.isStream(r) {
			next.ServeHTTP(w, r)
			return
		}
		release, err := s.OpenStream(r)
		if err != nil {
			s.refuseStream(w, r, err)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// isStream reports whether r opens a stream. A POST's body is read (it
// is in memory) and put back.
func (s *Server) isStream(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet:
		return true
	case http.MethodPost:
		if r.Header.Get("Mcp-Protocol-Version") < sessionlessRevision || r.Body == nil || r.Body == http.NoBody {
			return false
		}
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil || !bytes.Contains(body, []byte(methodSubscriptionsListen)) {
			return false
		}
		var msg struct {
			Method string `json:"method"`
		}
		return json.Unmarshal(body, &msg) == nil && msg.Method == methodSubscriptionsListen
	}
	return false
}

// withConn is the http.Server's ConnContext: it keeps each request's
// connection, for closing a stream's.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}
