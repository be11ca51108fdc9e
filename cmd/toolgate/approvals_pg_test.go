package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/pgtest"
)

// TestE2EApprovalTwoReplicas: two `toolgate serve` processes share a
// PostgreSQL ledger; after one approval, 20 identical calls racing across
// both run the method once (docs/contract.md §13: claimed atomically, also across
// replicas).
func TestE2EApprovalTwoReplicas(t *testing.T) {
	skipShort(t)
	t.Parallel()
	ledgerSpec := pgtest.Schema(t, "approvals_e2e")

	tokens := mcptest.WriteTokens(t, t.TempDir(), map[string]identity.TokenEntry{
		adminToken: {Subject: "ann", Roles: []string{"admin"}},
	})
	a := serveHTTP(t, "--tokens", tokens, "--ledger", ledgerSpec)
	b2 := serveHTTP(t, "--tokens", tokens, "--ledger", ledgerSpec)

	first := call(t, a.connect(t, adminToken, "2025-11-25", nil), "resetCounter", map[string]any{"key": "race"}, nil)
	m := heldResetCounter.FindStringSubmatch(first.Text)
	require.NotNil(t, m, first.Text)
	// The other replica finds the same pending request.
	other := call(t, b2.connect(t, adminToken, "2025-11-25", nil), "resetCounter", map[string]any{"key": "race"}, nil)
	require.Equal(t, first, other, "one request per subject, tool and arguments across replicas")

	var out, errOut strings.Builder
	code := run(t.Context(), &env{args: []string{"approvals", "approve", m[1], "--as", "bea", "--role", "admin", "--ledger", ledgerSpec},
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
	require.Equal(t, 0, code, errOut.String())

	const n = 20
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		s := a
		if i%2 == 1 {
			s = b2
		}
		sessions[i] = s.connect(t, adminToken, "2025-11-25", nil)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, n)
	errs := make([]error, n)
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			cctx, cancel := context.WithTimeout(t.Context(), callTimeout)
			defer cancel()
			results[i], errs[i] = cs.CallTool(cctx, &mcp.CallToolParams{Name: "resetCounter", Arguments: map[string]any{"key": "race"}})
		}()
	}
	close(start)
	wg.Wait()
	ran := 0
	for i, res := range results {
		require.NoError(t, errs[i])
		require.Len(t, res.Content, 1)
		ans := answer{Text: res.Content[0].(*mcp.TextContent).Text, IsError: res.IsError}
		if !ans.IsError {
			ran++
			require.Equal(t, "1", ans.Text)
		} else {
			require.Regexp(t, heldResetCounter, ans.Text)
		}
	}
	require.Equal(t, 1, ran, "the approved call ran once across both replicas")
}
