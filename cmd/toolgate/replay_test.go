package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/internal/testkit/gatewaytest"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/shadowtest"
	"github.com/toolgate/toolgate/toolcall"
)

// TestReplayMatchesShadow: serve the bundled policy over HTTP with
// --shadow-policy B (B hides price from managers) and --decision-log;
// three callers list and call every tool. The log holds exactly the
// shadow's two differences (price granted→hidden for the manager, listed
// and called), and `toolgate replay` of that log against B reports the
// same differences and exits 1; against the serving policy, none (exit 0).
func TestReplayMatchesShadow(t *testing.T) {
	dir := t.TempDir()
	cand := shadowtest.WriteCandidate(t, benchdata.ManagersLosePrice)
	callers := []*toolcall.Caller{
		{Subject: "max", Roles: []string{"manager"}},
		{Subject: "cora", Roles: []string{"contractor"}},
		{Subject: "root", Roles: []string{"admin"}},
	}
	entries := map[string]identity.TokenEntry{}
	for _, c := range callers {
		entries["token-"+c.Subject] = identity.TokenEntry{Subject: c.Subject, Roles: c.Roles}
	}
	tokens := mcptest.WriteTokens(t, dir, entries)
	logPath := filepath.Join(dir, "decisions.jsonl")
	off := false

	ctx := t.Context()
	g := gatewaytest.Serve(t, gateway.Config{Serve: config.Serve{HTTP: "127.0.0.1:0", Tokens: tokens, Ledger: "memory",
		Audit: filepath.Join(dir, "audit.jsonl"), DecisionLog: decisionlog.Settings{Target: logPath}, Watch: &off, Shadow: shadow.Settings{Policy: cand}}})
	for _, c := range callers {
		client := mcp.NewClient(&mcp.Implementation{Name: "replay-test", Version: "1"}, nil)
		tr := &http.Transport{}
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL,
			HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: "token-" + c.Subject, Next: tr}}, DisableStandaloneSSE: true}, nil)
		require.NoError(t, err)
		_, err = cs.ListTools(ctx, nil)
		require.NoError(t, err)
		for _, call := range []mcp.CallToolParams{
			{Name: "echo", Arguments: map[string]any{"text": "hi"}},
			{Name: "getReward", Arguments: map[string]any{"idReward": 7}},
			{Name: "price", Arguments: map[string]any{"price": map[string]any{"amount": "1.50", "currency": "EUR"}}},
			{Name: "execUrl", Arguments: map[string]any{"url": "https://example.com"}},
		} {
			_, err := cs.CallTool(ctx, &call)
			require.NoError(t, err)
		}
		_ = cs.Close()
		tr.CloseIdleConnections()
	}
	require.NoError(t, g.Stop())

	// The shadow's differences, from the decision log.
	var shadowed []string
	for _, ev := range shadowtest.Events(t, logPath) {
		shadowed = append(shadowed, ev.Method+" "+ev.Tool+" "+ev.Subject+" "+ev.Kind)
	}
	sort.Strings(shadowed)
	require.Equal(t, []string{"tools/call price max granted→hidden", "tools/list price max granted→hidden"}, shadowed)

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), &env{args: []string{"replay", "--decision-log", logPath, "--policy", cand, "--format", "json"}, stdout: &stdout, stderr: &stderr})
	require.Equal(t, 1, code, stderr.String())
	var res struct {
		Differences []struct {
			Kind, Method, Tool, Subject string
		} `json:"differences"`
		NotReplayable []any `json:"not_replayable"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	var replayed []string
	for _, d := range res.Differences {
		replayed = append(replayed, d.Method+" "+d.Tool+" "+d.Subject+" "+d.Kind)
	}
	sort.Strings(replayed)
	require.Equal(t, shadowed, replayed)
	require.Empty(t, res.NotReplayable)

	stdout.Reset()
	code = run(context.Background(), &env{args: []string{"replay", "--decision-log", logPath, "--policy", filepath.Join(dir, "nowhere"), "--format", "text"}, stdout: &stdout, stderr: &stderr})
	require.Equal(t, 2, code, "a candidate that does not load")
	grant, err := toolgate.Bundled.ReadFile(toolgate.BundledPolicyDir + "/grant.rego")
	require.NoError(t, err)
	serving := shadowtest.WriteCandidate(t, string(grant))
	stdout.Reset()
	code = run(context.Background(), &env{args: []string{"replay", "--decision-log", logPath, "--policy", serving}, stdout: &stdout, stderr: &stderr})
	require.Equal(t, 0, code, stdout.String()+stderr.String())
	require.Contains(t, stdout.String(), "0 differ, 0 not replayable")
}

// TestReplayEscapesLogStrings: a decision log is input from whoever could
// write to it; replay prints its strings (subject, roles, tool names) with
// terminal controls and bidi characters escaped as approvals are shown
// (approvals.Visible), in text and in JSON, never raw.
func TestReplayEscapesLogStrings(t *testing.T) {
	grant, err := toolgate.Bundled.ReadFile(toolgate.BundledPolicyDir + "/grant.rego")
	require.NoError(t, err)
	cand := shadowtest.WriteCandidate(t, string(grant))
	const (
		subject = "eve\x1b]0;owned\x07\x1b[2J"
		role    = "admin\u202egnp.exe"
		tool    = "echo\x1b[8m\u2066hidden"
	)
	event := func(method string, result map[string]any) string {
		b, err := json.Marshal(map[string]any{"decision_id": "d-" + method, "path": decisionlog.PathGrant, "revision": "r1",
			"input":  map[string]any{"caller": map[string]any{"subject": subject, "roles": []string{role}}, "request": map[string]any{"method": method, "tool": tool}},
			"result": result})
		require.NoError(t, err)
		return string(b) + "\n"
	}
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	require.NoError(t, os.WriteFile(logPath, []byte(event("tools/list", map[string]any{"listed": []string{tool}})+
		event("tools/call", map[string]any{"granted": true})), 0o600))

	for _, format := range []string{"text", "json"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), &env{args: []string{"replay", "--decision-log", logPath, "--policy", cand, "--format", format}, stdout: &stdout, stderr: &stderr})
		require.Equal(t, 1, code, "%s: %s%s", format, stdout.String(), stderr.String())
		out := stdout.String()
		require.Contains(t, out, "granted→hidden", format)
		for _, raw := range []string{"\x1b", "\x07", "\u202e", "\u2066"} {
			require.NotContains(t, out, raw, "%s: %q printed raw", format, raw)
		}
		if format == "text" {
			require.Contains(t, out, approvals.Visible(subject))
			require.Contains(t, out, approvals.Visible(role))
			require.Contains(t, out, approvals.Visible(tool))
		}
	}
}
