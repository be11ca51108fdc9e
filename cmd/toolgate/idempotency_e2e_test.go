package main

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestE2EIdempotencyKeyConfigurable: with --idempotency-key the ledger reads
// the key from that _meta entry: two calls with one key run the method
// once; festi/idempotencyKey is then an entry like any other (docs/contract.md
// §10).
func TestE2EIdempotencyKeyConfigurable(t *testing.T) {
	skipShort(t)
	t.Parallel()
	s := serveHTTP(t, "--tokens", writeTokens(t), "--ledger", "memory", "--idempotency-key", "acme/requestId")
	cs := s.connect(t, adminToken, "2025-11-25", nil)
	args := map[string]any{"key": "idem"}
	require.Equal(t, ok("1"), call(t, cs, "count", args, mcp.Meta{"acme/requestId": "r-1"}))
	require.Equal(t, ok("1"), call(t, cs, "count", args, mcp.Meta{"acme/requestId": "r-1"}), "the same key: the stored result")
	require.Equal(t, ok("2"), call(t, cs, "count", args, mcp.Meta{"festi/idempotencyKey": "r-1"}), "the default key is not read")
	require.Equal(t, ok("3"), call(t, cs, "count", args, mcp.Meta{"festi/idempotencyKey": "r-1"}))
}
