package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/oidctest"
)

// interopDir holds the TypeScript MCP SDK client that TestInteropTypeScript
// runs (package-lock.json pins the SDK; scripts/interop-setup installs it).
var interopDir = filepath.Join("..", "..", "testdata", "interop")

// TestInteropTypeScript drives `toolgate serve` over stdio and streamable
// HTTP with the official TypeScript MCP SDK client
// (testdata/interop/interop.mjs): list, a granted, a hidden and a denied
// call, a named-argument error, with exact texts; and over HTTP with access
// tokens of a real OpenID provider (docs/contract.md §12). Without the npm packages
// installed it skips, except under CI (the CI environment variable set),
// where it fails.
func TestInteropTypeScript(t *testing.T) {
	skipShort(t)
	t.Parallel()
	node := oidctest.RequireNode(t, interopDir, "TypeScript MCP SDK not installed: run npm ci in testdata/interop (scripts/interop-setup)")
	bin := toolgateBinary(t)
	args := []string{"interop.mjs", bin}
	// The go-sdk's conformance server as an importing upstream: the client
	// gets its prompts and reads its resources through toolgate (docs/contract.md §16).
	args = append(args, "--catalog-upstream", everythingServerBin(t))
	// With the OpenID provider (always under CI), the client also connects
	// with its access tokens (docs/contract.md §12).
	if _, err := os.Stat(filepath.Join(oidctest.Dir, "node_modules")); err == nil || os.Getenv("CI") != "" {
		port := oidctest.FreePort(t)
		p := oidctest.Start(t, 0, "http://127.0.0.1:"+strconv.Itoa(port)+"/mcp")
		args = append(args, "--issuer", p.Issuer, "--jwt-port", strconv.Itoa(port))
	} else {
		t.Log("oidc-provider not installed (scripts/oidc-setup): the JWT checks do not run")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = interopDir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("node interop.mjs:\n%s", out)
	if ctx.Err() != nil {
		t.Fatalf("interop.mjs did not finish within 3 minutes")
	}
	if err != nil {
		t.Fatalf("interop.mjs: %v", err)
	}
}
