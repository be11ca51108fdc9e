package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/toolcall"
)

// lockedBuffer is a log sink the test reads while the gateway writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTokensFileReloads: while serving, an edited tokens file takes effect
// as registry and policies do (a new caller connects, a removed one is
// refused), and a file that does not load keeps the last good tokens
// serving, with the reason logged (never the token).
func TestTokensFileReloads(t *testing.T) {
	ann := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	bob := &toolcall.Caller{Subject: "bob", Roles: []string{"admin"}}
	dir := t.TempDir()
	path := writeTokens(t, dir, ann)
	var logs lockedBuffer
	g := startGateway(t, gateway.Config{Serve: config.Serve{Tokens: path, Ledger: "memory", Audit: "-"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Stderr: &logs})

	dial := func(c *toolcall.Caller) error {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		client := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: tokenFor(c), Next: tr}}}, nil)
		if err == nil {
			_ = cs.Close()
		}
		return err
	}
	require.NoError(t, dial(ann))
	require.Error(t, dial(bob), "bob is not in the file yet")

	write := func(entries map[string]identity.TokenEntry, raw string) {
		var b strings.Builder
		for token, e := range entries {
			b.WriteString(`"` + identity.HashToken(token) + `": { subject: ` + e.Subject + ", roles: [admin] }\n")
		}
		b.WriteString(raw)
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(b.String()), 0o600))
		require.NoError(t, os.Rename(tmp, path)) // as an editor saves
	}
	write(map[string]identity.TokenEntry{tokenFor(bob): {Subject: "bob"}}, "")
	require.Eventually(t, func() bool { return dial(bob) == nil }, time.Minute, 50*time.Millisecond, "bob's token takes effect")
	require.Error(t, dial(ann), "ann's entry was removed: her token is refused")
	require.Contains(t, logs.String(), "tokens file reloaded")

	write(nil, "pasted-token-oops: { subject: carol }\n")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "the tokens file does not load") },
		time.Minute, 50*time.Millisecond)
	require.NoError(t, dial(bob), "the last good tokens keep serving")
	require.NotContains(t, logs.String(), "pasted-token-oops")
}
