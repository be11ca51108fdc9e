package upstream

//lint:file-ignore SA1019 logging is deprecated from protocol revision 2026-07-28 on; earlier revisions have it

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lateServer is an upstream whose tool "interact" logs "during LABEL"
// while it runs and answers; then, once the test sends on release, it
// logs "late LABEL" and sends on sent. memory: over in-memory transports
// (read in order, as stdio), else over streamable HTTP.
func lateServer(t *testing.T, memory bool) (up Config, release chan<- struct{}, sent <-chan struct{}) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "late"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	rel, done := make(chan struct{}), make(chan struct{})
	type in struct {
		Label string `json:"label"`
		Force bool   `json:"force,omitempty"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "interact"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "during " + a.Label})
		go func() {
			<-rel
			_ = req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: "late " + a.Label})
			done <- struct{}{}
		}()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Label}}}, nil, nil
	})
	if memory {
		return Config{Name: "up", Timeout: 5 * time.Second, Transport: func() mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(context.Background(), st, nil); err != nil {
				panic(err)
			}
			return ct
		}}, rel, done
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return Config{Name: "up", URL: ts.URL, Timeout: 5 * time.Second}, rel, done
}

// TestRelayLateLogDropped (docs/relay.md): a log message the upstream
// sends after its call's result is not relayed, for every call of a
// reused caller session alike and whatever the upstream's transport; the
// messages sent while each call runs are. (Before: over an in-order
// transport every late message reached the client, over streamable HTTP
// none.)
func TestRelayLateLogDropped(t *testing.T) {
	t.Parallel()
	for name, memory := range map[string]bool{"in-order": true, "http": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			up, release, sent := lateServer(t, memory)
			pool := newPool(t, up)
			server := redactFront(t, pool, "package toolgate.result\n")
			cs, got := connectSeen(t, server)
			labels := []string{"one", "two", "three", "four"}
			var want []string
			for _, label := range labels {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": label}})
				require.NoError(t, err)
				require.False(t, res.IsError, "%v", res.Content[0])
				want = append(want, `log {"data":"during `+label+`","level":"info"}`)
				require.Eventually(t, func() bool { return len(got.snapshot()) >= len(want) }, failureBound, time.Millisecond)
				// The late message is sent (and, in order, read) before the
				// next call.
				release <- struct{}{}
				<-sent
				if memory {
					// Written is not yet read: the session reads it (its
					// "during" and its late message, two a call) before the
					// next call leases it.
					n := uint64(2 * len(want))
					require.Eventually(t, func() bool { return handledNotifications(pool) >= n }, failureBound, time.Millisecond)
				}
			}
			assert.Equal(t, want, got.snapshot())
		})
	}
}

// handledNotifications is how many notifications the idle caller sessions
// of p's upstreams have handled (those that count them: in order).
func handledNotifications(p *Pool) uint64 {
	var n uint64
	for _, c := range p.conns {
		c.relay.mu.Lock()
		for _, cs := range c.relay.idle {
			if cs.in != nil {
				cs.in.mu.Lock()
				n += cs.in.handled
				cs.in.mu.Unlock()
			}
		}
		c.relay.mu.Unlock()
	}
	return n
}
