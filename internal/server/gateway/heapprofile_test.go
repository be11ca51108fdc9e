package gateway_test

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
)

var heapProfiles = flag.String("heapprofiles", "", "`dir`: TestHeapProfileAtTenThousandRows writes heap profiles of the served gateway there (it is skipped without)")

// TestHeapProfileAtTenThousandRows is a developer's tool, not a check: it
// serves the gateway as `toolgate serve --stdio` does, with
// the binary's defaults, 10 000 rows and a memoised grant policy, in this
// process, and writes heap profiles after start-up (start.pprof), after 8
// concurrent first calls, 200 more and a listing (served.pprof), and after
// a reload that adds a row (reloaded.pprof), with the live heap of each on
// the log. Read them with go tool pprof -sample_index=inuse_space (what is
// kept) or alloc_space (what was allocated, transient garbage included).
//
//	go test ./internal/server/gateway -run TestHeapProfileAtTenThousandRows -heapprofiles /tmp/prof -v
func TestHeapProfileAtTenThousandRows(t *testing.T) {
	if *heapProfiles == "" {
		t.Skip("a developer's tool: give -heapprofiles DIR")
	}
	require.NoError(t, os.MkdirAll(*heapProfiles, 0o755))
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte(benchdata.Registry(10000, false)), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "policy"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "policy", "grant.rego"), []byte(`package toolgate.grant

granted := {t.name |
	some t in input.tools
	t.base
	t.annotations.readOnlyHint == true
} if {
	"contractor" in input.caller.roles
}
`), 0o644))

	cfg := gateway.Config{Serve: config.Serve{Registry: reg, Policy: filepath.Join(dir, "policy"), Stdio: true, As: "cid",
		Roles: []string{"manager", "contractor"}, EvalTimeout: time.Minute}, Stderr: io.Discard}
	require.NoError(t, cfg.SetDefaults())
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	cfg.Stdin, cfg.Stdout = serverIn, serverOut
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	g, err := gateway.New(ctx, cfg)
	require.NoError(t, err)
	t.Logf("gateway.New: %s", time.Since(start))
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	defer func() {
		clientOut.Close()
		<-done
		g.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "heapprofile", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)
	defer cs.Close()
	profile(t, "start.pprof")

	call := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "hello"}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(call)
	}
	wg.Wait()
	for range 200 {
		call()
	}
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.NotEmpty(t, list.Tools)
	list = nil
	profile(t, "served.pprof")

	rev := g.Engine().Current()
	f, err := os.OpenFile(reg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("  - { name: added, method: demo.echo, arguments: [{ name: text, type: string, required: true }], annotations: { readOnlyHint: true } }\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = g.Engine().Reload(ctx)
	require.NoError(t, err)
	require.NotSame(t, rev, g.Engine().Current())
	rev = nil
	call()
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	profile(t, "reloaded.pprof")
}

// profile logs the live heap after a full collection and writes a heap
// profile to name in -heapprofiles.
func profile(t *testing.T, name string) {
	t.Helper()
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f, err := os.Create(filepath.Join(*heapProfiles, name))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, pprof.Lookup("heap").WriteTo(f, 0))
	t.Logf("%s: live heap %.1f MiB, %.1f MiB allocated so far, heap from the OS %.1f MiB", name,
		float64(ms.HeapAlloc)/(1<<20), float64(ms.TotalAlloc)/(1<<20), float64(ms.HeapSys-ms.HeapReleased)/(1<<20))
}
