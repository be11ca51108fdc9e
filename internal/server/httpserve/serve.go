package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// ListenAndServe listens on addr and serves until ctx is done, then shuts
// down gracefully: it stops accepting connections, lets requests in flight
// finish within Options.ShutdownGrace (a tool call's after hooks run before
// its response is written, so they run too), then closes the MCP sessions,
// which ends their standalone SSE streams. Requests still running when the
// grace period is over have their context cancelled (the after hooks of a
// call still run) and their connections closed. ready, when not nil, is called
// with the address listened on once connections are accepted.
//
// It returns nil after a graceful shutdown, and an error when it cannot
// listen, when serving fails, or when requests were still running at the
// end of the grace period (they are then cut off).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("httpserve: %w", err)
	}
	return s.Serve(ctx, ln, ready)
}

// Serve is ListenAndServe on a listener of the caller's; it closes ln.
// It caps the connections open at once on ln (Options.MaxConnections) and
// closes keep-alive connections idle for Options.IdleTimeout. With
// Options.MetricsAddr set, it also listens there (and fails when it
// cannot).
func (s *Server) Serve(ctx context.Context, ln net.Listener, ready func(net.Addr)) error {
	var metricsLn net.Listener
	if s.opts.MetricsAddr != "" && s.opts.Metrics != nil {
		var err error
		if metricsLn, err = net.Listen("tcp", s.opts.MetricsAddr); err != nil {
			_ = ln.Close()
			return fmt.Errorf("httpserve: metrics: %w", err)
		}
	}
	hs, ln := s.httpServer(s, ln, s.streams)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if metricsLn != nil {
		var ms *http.Server
		ms, metricsLn = s.httpServer(s.metricsHandler(), metricsLn, nil)
		go func() { _ = ms.Serve(metricsLn) }()
		defer ms.Close()
		s.log.Info("toolgate: serving metrics", slog.String("url", "http://"+metricsLn.Addr().String()+"/metrics"))
	}
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		s.bodies.stop()
		s.closeSessions()
		return fmt.Errorf("httpserve: %w", err)
	case <-ctx.Done():
	}
	// Requests still receiving their body are cut: shutdown waits only
	// for those whose body was read.
	s.bodies.stop()

	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownGrace)
	defer cancel()
	shut := make(chan error, 1)
	// Shutdown closes the listener at once, then waits for every
	// connection to go idle. Standalone SSE streams (GET /mcp) never do
	// until their session closes, hence the order below.
	go func() { shut <- hs.Shutdown(grace) }()
	cutOff := s.inflight.wait(grace) != nil
	if cutOff {
		s.abort()
	}
	// A session closes once its running requests return: bounded, for
	// a method that ignores cancellation.
	closed := make(chan struct{})
	go func() { s.closeSessions(); close(closed) }()
	select {
	case <-closed:
	case <-grace.Done():
		cutOff = true
		s.abort()
		select {
		case <-closed:
		case <-time.After(abortWait):
		}
	}
	if err := <-shut; err != nil {
		cutOff = true
	}
	if cutOff {
		_ = hs.Close()
		return fmt.Errorf("httpserve: requests still running after the %s grace period were cut off", s.opts.ShutdownGrace)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("httpserve: %w", err)
	}
	return nil
}

// httpServer returns the http.Server for h on ln, and ln capped at
// Options.MaxConnections; at the cap, the listener closes the oldest of
// streams when no connection is idle.
func (s *Server) httpServer(h http.Handler, ln net.Listener, streams *streamSet) (*http.Server, net.Listener) {
	hs := &http.Server{
		Handler: h,
		// The body's deadline is set per request (Options.ReadTimeout)
		// and lifted once it is read: http.Server.ReadTimeout would also
		// cut long responses (SSE streams).
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       s.opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnContext:       withConn,
	}
	if lim := limitListen(ln, s.opts.MaxConnections); lim != nil {
		lim.streams = streams
		hs.ConnState = lim.connState
		ln = lim
	}
	return hs, ln
}

// metricsHandler serves Metrics at /metrics to anyone, behind the Host and
// Origin checks.
func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.opts.Metrics)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.guard(w, r) {
			mux.ServeHTTP(w, r)
		}
	})
}

// abortWait bounds the wait for cancelled requests to return once the
// grace period is over.
const abortWait = 2 * time.Second

// closeSessions closes every MCP session of the server.
func (s *Server) closeSessions() {
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}

// tracker counts requests in flight; wait returns once none is.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (t *tracker) enter() {
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

func (t *tracker) leave() {
	t.mu.Lock()
	t.n--
	if t.n == 0 {
		close(t.idle)
		t.idle = nil
	}
	t.mu.Unlock()
}

// wait returns nil once no request is in flight, ctx's error if it ends
// first. Requests that start while it waits are waited for too.
func (t *tracker) wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		idle := t.idle
		t.mu.Unlock()
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
