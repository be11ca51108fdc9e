// Package gatewaytest runs the gateway inside a test: gateway.Run in a
// goroutine, waited on until it serves, stopped at the end of the test.
//
//	g := gatewaytest.Serve(t, gateway.Config{Serve: config.Serve{HTTP: "127.0.0.1:0"}})
//	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL}, nil)
//	...
//	require.NoError(t, g.Stop())
package gatewaytest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/gateway"
)

// Running is a gateway serving HTTP.
type Running struct {
	Addr net.Addr // the listener's
	URL  string   // the MCP endpoint: http://Addr/mcp

	stop func() error
}

// Stop shuts the gateway down and returns Run's error (a deadline error
// when it does not return within 30 s); later calls return the same.
// Not safe for concurrent use.
func (r *Running) Stop() error { return r.stop() }

// Serve runs gateway.Run with cfg on the address cfg.HTTP names until Stop
// or the end of the test. It replaces cfg.Ready, and fails the test when
// Run returns before serving or does not serve within 30 s.
func Serve(t testing.TB, cfg gateway.Config) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	cfg.Ready = func(a net.Addr) { ready <- a }
	done := make(chan error, 1)
	go func() { done <- gateway.Run(ctx, cfg) }()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		require.NoError(t, err, "gateway.Run returned before serving")
		t.FailNow()
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("gateway did not start")
	}
	var stopped bool
	var runErr error
	r := &Running{Addr: addr, URL: "http://" + addr.String() + "/mcp"}
	r.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = context.DeadlineExceeded
			}
		}
		return runErr
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}
