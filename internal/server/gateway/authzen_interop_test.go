package gateway_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestAuthZENInteropNode runs testdata/authzen/authzen-interop.mjs, an
// AuthZEN Authorization API 1.0 client written from the specification
// alone in plain Node (fetch, no SDK), against the gateway: the
// specification's own example requests (evaluation; evaluations without
// and with default values, with options and under each evaluations
// semantic), MCP-shaped ones, the metadata, X-Request-ID, and the PDP's
// authentication (401 without or with an unknown token, 403 without the
// PDP role). It needs node (20 or later): skipped under -short, failing
// without it otherwise.
func TestAuthZENInteropNode(t *testing.T) {
	if testing.Short() {
		t.Skip("the AuthZEN interop client needs node: skipped under -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the AuthZEN interop client needs node (20 or later) on PATH: %v", err)
	}
	t.Parallel()
	base, _ := startPDP(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "authzen-interop.mjs", base, tokenFor(pep), tokenFor(notPEP))
	cmd.Dir = filepath.Join("..", "..", "..", "testdata", "authzen")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("node authzen-interop.mjs:\n%s", out)
	if ctx.Err() != nil {
		t.Fatal("authzen-interop.mjs did not finish within 2 minutes")
	}
	if err != nil {
		t.Fatalf("authzen-interop.mjs: %v", err)
	}
}
