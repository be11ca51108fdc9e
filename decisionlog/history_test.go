package decisionlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// historySource keeps callers' histories, read_record remembering its
// text, and a call rule that reads input.history.
var historySource = engine.Source{FS: fstest.MapFS{
	"registry.yaml": {Data: []byte(`history: {per: 1h, max: 10}
tools:
  - name: read_record
    method: demo.echo
    remember: [text]
    arguments: [{ name: text, type: string, required: true }]
`)},
	"policies/history.rego": {Data: []byte(`package toolgate.call

deny contains "read enough" if count(input.history) >= 5
`)},
}, Registry: "registry.yaml", Policies: "policies"}

// historyEvents makes three calls of read_record, whose policy reads the
// caller's history, with a decision log of opts, and returns the call
// events as written.
func historyEvents(t *testing.T, opts decisionlog.Options) []map[string]any {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.New(ctx, historySource, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	sink := &memSink{}
	l := decisionlog.New(sink, opts)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(),
		Caller:  mcpadapter.StaticCaller(&toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}),
		History: ledger.NewHistory(store.NewMemoryStore(), nil)})
	a.AddObserver(l.Observer())
	s := a.NewServer(&mcp.Implementation{Name: "toolgate"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, mcpadapter.WrapTransport(st), nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	for _, id := range []string{"secret-record-1", "secret-record-2", "secret-record-3"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_record", Arguments: map[string]any{"text": id}})
		require.NoError(t, err)
		require.False(t, res.IsError)
	}
	require.NoError(t, cs.Close())
	_ = ss.Wait()
	require.NoError(t, l.Close(ctx))
	var out []map[string]any
	for _, raw := range sink.events {
		var e map[string]any
		require.NoError(t, json.NewDecoder(bytes.NewReader(raw)).Decode(&e))
		if e["path"] == decisionlog.PathCall {
			out = append(out, e)
		}
	}
	require.Len(t, out, 3)
	return out
}

// TestHistoryInDecisionLog: a call event says how many entries of the
// caller's history its decision read, with their hash, never their values;
// with HistoryEntries the operator asked for the entries, and they are
// there.
func TestHistoryInDecisionLog(t *testing.T) {
	t.Parallel()
	for i, e := range historyEvents(t, decisionlog.Options{}) {
		hist := e["input"].(map[string]any)["history"].(map[string]any)
		assert.Equal(t, float64(i), hist["entries"], "call %d read the %d before it", i+1, i)
		assert.Len(t, hist["sha256"], 64)
		assert.NotContains(t, hist, "read")
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "secret-record", "no remembered value in the event")
	}

	events := historyEvents(t, decisionlog.Options{HistoryEntries: true})
	hist := events[2]["input"].(map[string]any)["history"].(map[string]any)
	assert.Equal(t, float64(2), hist["entries"])
	read := hist["read"].([]any)
	require.Len(t, read, 2)
	assert.Equal(t, map[string]any{"text": "secret-record-2"}, read[0].(map[string]any)["arguments"], "newest first")
	assert.Equal(t, "result", read[1].(map[string]any)["outcome"])
	raw, err := json.Marshal(events[0])
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(raw), `"read":[]`), "%s", raw)
}
