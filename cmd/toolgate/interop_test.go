package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// interopDir holds the TypeScript MCP SDK client that TestInteropTypeScript
// runs (package-lock.json pins the SDK; scripts/interop-setup installs it).
var interopDir = filepath.Join("..", "..", "testdata", "interop")

// TestInteropTypeScript drives `toolgate serve` over stdio and streamable
// HTTP with the official TypeScript MCP SDK client
// (testdata/interop/interop.mjs): list, a granted, a hidden and a denied
// call, a named-argument error, with exact texts. Without the npm packages
// installed it skips, except under CI (the CI environment variable set),
// where it fails.
func TestInteropTypeScript(t *testing.T) {
	skipShort(t)
	t.Parallel()
	if _, err := os.Stat(filepath.Join(interopDir, "node_modules")); err != nil {
		const msg = "TypeScript MCP SDK not installed: run npm ci in testdata/interop (scripts/interop-setup)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI is set, so this is a failure")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not on PATH; CI is set, so this is a failure")
		}
		t.Skip("node is not on PATH")
	}
	bin := toolgateBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "interop.mjs", bin)
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
