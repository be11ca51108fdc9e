package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSigtermWithSlowBodyExitsAtOnce: SIGTERM while a client is still sending a
// request body: the body is cut, the process exits 0 at once instead of
// waiting out the shutdown grace (10 s) and failing. The exit status is
// the oracle: a shutdown that waited for the body is cut off at the end of
// the grace and exits non-zero, so no time is measured.
func TestSigtermWithSlowBodyExitsAtOnce(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := serveHTTP(t)
	addr := strings.TrimPrefix(s.base, "http://")
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", addr)
	require.NoError(t, err)
	// The server is up and has had the slow request's headers.
	resp, err := http.Get(s.base + "/healthz")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	start := time.Now()
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.Exited():
		t.Logf("exited %s after SIGTERM with a slow body pending", time.Since(start))
		require.NoError(t, s.Err(), "exit status; stderr:\n%s", s.Stderr.String())
		require.Equal(t, 0, s.Cmd.ProcessState.ExitCode())
	case <-time.After(startTimeout): // a failure bound only
		t.Fatalf("toolgate serve did not exit after SIGTERM\nstderr:\n%s", s.Stderr.String())
	}
}
