package decisionlog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// observed serves the bundled example to caller with the decision-log
// observer and the audit trail, runs do against it, and returns the
// events (decoded with OPA's own type) and the audit lines.
func observed(t *testing.T, caller *toolcall.Caller, do func(cs *mcp.ClientSession)) (*engine.Engine, []logs.EventV1, []audit.Record) {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.New(ctx, toolgate.Source("", ""), engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	sink := &memSink{}
	l := decisionlog.New(sink, decisionlog.Options{})
	var trail bytes.Buffer
	au := audit.New(&trail, audit.Options{})
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: demo.Methods(), Caller: mcpadapter.StaticCaller(caller)})
	a.AddHook(au.Hook())
	a.AddObserver(l.Observer())
	s := a.NewServer(&mcp.Implementation{Name: "toolgate"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, mcpadapter.WrapTransport(st), nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	do(cs)
	require.NoError(t, cs.Close())
	_ = ss.Wait()
	require.NoError(t, l.Close(ctx))
	require.NoError(t, au.Close())

	var events []logs.EventV1
	for _, raw := range sink.events {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var e logs.EventV1
		require.NoError(t, dec.Decode(&e), "%s", raw)
		events = append(events, e)
	}
	var lines []audit.Record
	sc := bufio.NewScanner(&trail)
	for sc.Scan() {
		var r audit.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		lines = append(lines, r)
	}
	return eng, events, lines
}

// Every grant decision is one toolgate/grant/granted event — the listing's,
// the granted call's, and those of a hidden name and a name no row has,
// which are logged alike — and the call that reached step 5 one
// toolgate/call event under the audit line's decision_id, all with the
// revision the audit line names.
func TestObserverLogsEveryDecision(t *testing.T) {
	t.Parallel()
	max := &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}
	eng, events, lines := observed(t, max, func(cs *mcp.ClientSession) {
		_, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		for _, name := range []string{"add", "execUrl", "absentToolName"} {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"a": 1, "b": 2}})
			require.NoError(t, err)
		}
	})
	rev := eng.Current().String()
	require.Len(t, lines, 1, "the audit trail writes the call that ran")
	require.Equal(t, rev, lines[0].Revision)

	byID := map[string]logs.EventV1{}
	paths := map[string]int{}
	for _, e := range events {
		paths[e.Path]++
		byID[e.DecisionID] = e
		require.Equal(t, rev, e.Revision, e.Path)
		require.Equal(t, rev, e.Bundles["toolgate"].Revision, e.Path)
	}
	require.Equal(t, map[string]int{decisionlog.PathGrant: 4, decisionlog.PathCall: 1}, paths)
	require.Len(t, byID, len(events), "decision ids are unique")

	call, ok := byID[lines[0].DecisionID]
	require.True(t, ok, "a call event has the audit line's decision_id")
	require.Equal(t, decisionlog.PathCall, call.Path)
	require.Equal(t, "result", (*call.Result).(map[string]any)["outcome"])
	grant, ok := byID[lines[0].DecisionID+"-grant"]
	require.True(t, ok)
	require.Equal(t, map[string]any{"granted": true, "outcome": "no_override"}, *grant.Result)

	// Hidden is absent: the two step 4 events differ in nothing but ids,
	// time, timers and the name sent.
	var refused []map[string]any
	for _, e := range events {
		if e.Path != decisionlog.PathGrant || (*e.Result).(map[string]any)["granted"] != false {
			continue
		}
		b, err := json.Marshal(e)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		delete(m, "decision_id")
		delete(m, "timestamp")
		delete(m, "metrics")
		delete(m, "custom")
		m["input"].(map[string]any)["request"].(map[string]any)["tool"] = "<name>"
		refused = append(refused, m)
	}
	require.Len(t, refused, 2)
	require.Equal(t, refused[0], refused[1])

	var listing logs.EventV1
	for _, e := range events {
		if in, _ := (*e.Input).(map[string]any); in["request"].(map[string]any)["method"] == "tools/list" {
			listing = e
		}
	}
	require.Equal(t, decisionlog.PathGrant, listing.Path)
	require.Contains(t, (*listing.Result).(map[string]any)["listed"], "add")
	require.NotContains(t, (*listing.Result).(map[string]any)["listed"], "execUrl")
}

// Nobody signed in takes no grant decision: nothing is logged.
func TestObserverLogsNothingForNobody(t *testing.T) {
	t.Parallel()
	_, events, lines := observed(t, nil, func(cs *mcp.ClientSession) {
		_, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
		require.NoError(t, err)
	})
	require.Empty(t, events)
	require.Empty(t, lines)
}
