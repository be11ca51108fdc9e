package gateway_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
)

// BenchmarkStdioCallDefaults measures one tools/call of echo from a go-sdk
// client over a pair of pipes, as `toolgate serve --stdio` serves it with
// the binary's defaults (the SQLite ledger in the state directory, the
// audit trail on stderr, metrics; 1 000 rows, the bundled
// grant policy, which is memoised), next to a bare go-sdk server with the
// same echo tool over the same pipes. The call carries _meta, as
// internal/testkit/benche2e's does.
//
//	go test -run '^$' -bench StdioCallDefaults -benchmem -count 6 ./internal/server/gateway
func BenchmarkStdioCallDefaults(b *testing.B) {
	b.Run("toolgate", func(b *testing.B) {
		dir := b.TempDir()
		b.Setenv("XDG_STATE_HOME", b.TempDir())
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
		writeBenchSource(b, dir, 1000)
		// Watching is off: it costs a call nothing, but its first attempt
		// rebuilds the revision once, which would land in the measurement.
		off := false
		s := config.Serve{Registry: filepath.Join(dir, "registry.yaml"), Policy: filepath.Join(dir, "policies"),
			Stdio: true, As: "cid", Roles: []string{"manager", "contractor"}, Watch: &off}
		require.NoError(b, s.SetDefaults())
		require.True(b, strings.HasPrefix(s.Ledger, "sqlite:"), s.Ledger)
		benchStdio(b, serveStdio(s))
	})
	b.Run("bare", func(b *testing.B) {
		benchStdio(b, func(ctx context.Context, in io.ReadCloser, out io.WriteCloser) func() error {
			s := benchdata.BareServer()
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out}) }()
			return func() error { return <-done }
		})
	})
}

// serveStdio is benchStdio's serve for the gateway serving s over stdio,
// its log discarded.
func serveStdio(s config.Serve) func(ctx context.Context, in io.ReadCloser, out io.WriteCloser) func() error {
	return func(ctx context.Context, in io.ReadCloser, out io.WriteCloser) func() error {
		cfg := gateway.Config{Serve: s, Stdin: in, Stdout: out, Stderr: io.Discard,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		done := make(chan error, 1)
		go func() { done <- gateway.Run(ctx, cfg) }()
		return func() error { return <-done }
	}
}

// benchStdio connects a client to the server serve starts on a pair of
// pipes and measures calls of echo.
func benchStdio(b *testing.B, serve func(ctx context.Context, in io.ReadCloser, out io.WriteCloser) (wait func() error)) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	wait := serve(ctx, inR, outW)
	defer func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		_ = wait()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(b, err)
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}, Meta: mcp.Meta{"festi/runId": "r-1"}}
	call := func() error {
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			return err
		}
		if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hello" {
			return fmt.Errorf("echo answered %+v", res.Content[0])
		}
		return nil
	}
	// Warm: the decision is memoised. The first one is evaluated whole,
	// within the default deadline (250 ms), which a loaded machine may
	// miss; a failed decision is not memoised, so the next call tries
	// again.
	for i := 0; ; i++ {
		err := call()
		if err == nil {
			break
		}
		if i == 4 {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
}

// writeBenchSource writes a registry of n rows (echo first, then rows in
// and out of sections, one in fifty a URL driver) and the bundled grant
// policy under dir.
func writeBenchSource(b *testing.B, dir string, n int) {
	b.Helper()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "registry.yaml"), []byte(benchdata.Registry(n, false)), 0o644))
	grant, err := fs.ReadFile(toolgate.ExamplePolicies(), "grant.rego")
	require.NoError(b, err)
	require.NoError(b, os.MkdirAll(filepath.Join(dir, "policies"), 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(dir, "policies", "grant.rego"), grant, 0o644))
}
