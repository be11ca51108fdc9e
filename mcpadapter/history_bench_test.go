package mcpadapter_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// Call rules of BenchmarkHistoryCall: both evaluated per call (they read
// the arguments), one reading input.history.
const (
	benchReadsHistory = `package toolgate.call

deny contains "three payments failed" if {
	input.tool.name == "echo"
	count([h | some h in input.history; h.tool == "pay"; h.outcome == "failed"]) >= 3
}
`
	benchIgnoresHistory = `package toolgate.call

deny contains "not that text" if {
	input.tool.name == "echo"
	input.request.arguments.text == "forbidden"
}
`
)

// BenchmarkHistoryCall measures one governed tools/call of echo over
// in-memory transports with a history of 100 entries (per 1h, max 100),
// with the memory and the SQLite store: policy=reads loads the history
// for its call rules, policy=ignores does not. Both record the call (the
// registry keeps a history), so the difference is loading and reading it.
func BenchmarkHistoryCall(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		for _, policy := range []string{"reads", "ignores"} {
			b.Run(fmt.Sprintf("store=%s/policy=%s", kind, policy), func(b *testing.B) {
				var st store.HistoryStore = store.NewMemoryStore()
				if kind == "sqlite" {
					s, err := store.OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"))
					require.NoError(b, err)
					b.Cleanup(func() { _ = s.Close() })
					st = s
				}
				src := benchIgnoresHistory
				if policy == "reads" {
					src = benchReadsHistory
				}
				benchRoundTrip(b, historyServer(b, st, src))
			})
		}
	}
}

// historyServer serves the bundled example keeping a history of 100
// entries per caller in st, with the call rules src; the caller's
// history is filled with 100 entries first.
func historyServer(b *testing.B, st store.HistoryStore, src string) func(context.Context, mcp.Transport) (*mcp.ServerSession, error) {
	reg := "history: {per: 1h, max: 100}\n" + strings.Replace(string(toolgate.ExampleRegistry()),
		"    method: demo.echo\n", "    method: demo.echo\n    remember: [text]\n", 1)
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(reg)}, "policies/history.rego": {Data: []byte(src)}}
	eng, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	require.NoError(b, err)
	h := ledger.NewHistory(st, nil)
	caller := &toolcall.Caller{Subject: "bench", Roles: []string{"manager"}}
	now := time.Now()
	for i := range 100 {
		e := engine.HistoryEntry{Tool: "pay", At: now.Add(-time.Duration(i) * time.Second), Outcome: "result", Arguments: []byte(`{"text":"x"}`)}
		require.NoError(b, h.Record(context.Background(), hooks.SourceLocal, caller.Subject, e, time.Hour, 100))
	}
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(caller), History: h})
	s := a.NewServer(&mcp.Implementation{Name: "toolgate", Version: "bench"}, nil)
	return func(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
		return s.Connect(ctx, mcpadapter.WrapTransport(t), nil)
	}
}
