package httpserve

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// bodies keeps the requests whose body is still arriving, so that shutdown
// can cut them: shutdown waits only for requests whose body was read.
type bodies struct {
	mu      sync.Mutex
	stopped bool
	reading map[*body]struct{}
}

// body is a request body that must arrive within a read deadline. Once
// read to its end, the deadline is lifted (a response may stream for
// long), the request counts as in flight and shutdown waits for it.
type body struct {
	io.ReadCloser
	rc     *http.ResponseController
	owner  *bodies
	flight *tracker
	read   bool // the body was read to its end; owned by the handler
}

// start sets the read deadline of r's connection and records the body as
// arriving; it reports false once shutdown has begun.
func (bs *bodies) start(w http.ResponseWriter, rb io.ReadCloser, timeout time.Duration, flight *tracker) (*body, bool) {
	b := &body{ReadCloser: rb, rc: http.NewResponseController(w), owner: bs, flight: flight}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.stopped {
		return nil, false
	}
	if bs.reading == nil {
		bs.reading = map[*body]struct{}{}
	}
	bs.reading[b] = struct{}{}
	// The deadline also bounds what the server discards of a body the
	// handler did not read.
	_ = b.rc.SetReadDeadline(time.Now().Add(timeout))
	return b, true
}

// stop cuts every body still arriving (its reads fail at once) and refuses
// new ones.
func (bs *bodies) stop() {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.stopped = true
	for b := range bs.reading {
		_ = b.rc.SetReadDeadline(time.Now())
	}
}

func (bs *bodies) remove(b *body) bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	_, ok := bs.reading[b]
	delete(bs.reading, b)
	return ok
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.read {
		b.read = true
		if b.owner.remove(b) {
			// No deadline on the connection while the response streams
			// (the server's background read would cancel the request).
			_ = b.rc.SetReadDeadline(time.Time{})
		}
		b.flight.enter()
	}
	return n, err
}

// finish ends the request's account.
func (b *body) finish() {
	if b.read {
		b.flight.leave()
		return
	}
	b.owner.remove(b)
}

// limitListener accepts at most cap connections at once. At the cap it
// first closes the connection idle (between keep-alive requests) the
// longest, if any, else the oldest stream's (streams hold at most their
// share of the cap, so the rest are plain requests), then waits for one
// to close: new connections wait in the listen backlog meanwhile. Every
// connection ends in bounded time (header and body deadlines, the idle
// timeout, the session timeout for streams), so the wait does too.
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once

	mu   sync.Mutex
	idle map[net.Conn]time.Time // since when each idle connection is

	streams *streamSet // nil: no streams to close
}

// limitListen returns ln capped at n connections; nil when n <= 0 (no
// cap).
func limitListen(ln net.Listener, n int) *limitListener {
	if n <= 0 {
		return nil
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{}), idle: map[net.Conn]time.Time{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	default:
		if !l.closeOldestIdle() && l.streams != nil {
			l.streams.closeOldest()
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// connState is the http.Server's ConnState hook: it keeps the idle
// connections.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == http.StateIdle {
		l.idle[c] = time.Now()
		return
	}
	delete(l.idle, c)
}

func (l *limitListener) closeOldestIdle() bool {
	l.mu.Lock()
	var oldest net.Conn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(l.idle, oldest)
	l.mu.Unlock()
	if oldest == nil {
		return false
	}
	_ = oldest.Close()
	return true
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
