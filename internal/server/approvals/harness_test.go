package approvals_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// The registry and policy of the tests: wipe needs an admin's approval,
// secret too but is granted to role ops only (hidden from the others), ask
// needs the user's confirmation, free needs nothing.
const testRegistry = `
sections:
  ops: { roles: [ops] }
tools:
  - name: wipe
    method: test.run
    arguments:
      - { name: target, type: string, required: true }
  - name: secret
    method: test.run
    section: ops
    arguments:
      - { name: target, type: string, required: true }
  - name: ask
    method: test.run
    arguments:
      - { name: target, type: string, required: true }
  - name: free
    method: test.run
    arguments:
      - { name: target, type: string, required: true }
`

const testPolicy = `package toolgate.call

approval := {"reason": "wiping needs an admin", "approvers": ["admin"], "ttl": "10m"} if {
	input.tool.name in {"wipe", "secret"}
}

confirm := "Run ask on this target?" if input.tool.name == "ask"
`

var (
	alice   = &toolcall.Caller{Subject: "alice", Roles: []string{"contractor"}}
	bob     = &toolcall.Caller{Subject: "bob", Roles: []string{"admin"}}
	carol   = &toolcall.Caller{Subject: "carol", Roles: []string{"manager"}}
	selfish = &toolcall.Caller{Subject: "selfish", Roles: []string{"admin"}}
)

// clock is an injectable clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// env is a governed MCP server over HTTP with approvals, as the binary
// assembles it, on a loopback test server.
type env struct {
	url   string
	clock *clock
	gate  *approvals.Gate
	audit *syncBuffer
	aud   *audit.Auditor // writes audit

	mu   sync.Mutex
	runs map[string]int // test.run invocations by target
}

func (e *env) ran(target string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[target]
}

// syncBuffer is the audit trail the env writes.
type syncBuffer struct{ proctest.Buffer }

// auditTrail closes the env's auditor, which waits until its writer has
// written every record the calls made so far handed it (the after hooks
// run before a call is answered), and returns the trail: records and
// text. No call may follow (its record would be dropped).
func (e *env) auditTrail(t testing.TB) ([]audit.Record, string) {
	t.Helper()
	require.NoError(t, e.aud.Close())
	return e.audit.records(t), e.audit.String()
}

func (s *syncBuffer) records(t testing.TB) []audit.Record {
	var out []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if line == "" {
			continue
		}
		var r audit.Record
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		out = append(out, r)
	}
	return out
}

func tokenFor(c *toolcall.Caller) string { return "token-of-" + c.Subject }

func newEnv(t testing.TB, store store.ApprovalStore) *env {
	t.Helper()
	return newEnvPolicy(t, store, testPolicy)
}

// newEnvPolicy is newEnv with another call policy.
func newEnvPolicy(t testing.TB, store store.ApprovalStore, policy string) *env {
	t.Helper()
	return newEnvOptions(t, store, policy, approvals.Options{})
}

// newEnvOptions is newEnvPolicy with gate options (its clock is the env's).
func newEnvOptions(t testing.TB, store store.ApprovalStore, policy string, opts approvals.Options) *env {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "registry.yaml"), []byte(testRegistry), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "rego"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rego", "call.rego"), []byte(policy), 0o600))
	ctx := context.Background()
	eng, err := engine.New(ctx, toolgate.Source(filepath.Join(dir, "registry.yaml"), filepath.Join(dir, "rego")), engine.WithTimeout(time.Minute))
	require.NoError(t, err)

	e := &env{clock: newClock(), audit: &syncBuffer{}, runs: map[string]int{}}
	methods := methods.Map{}
	methods.Register("test.run", func(_ context.Context, a struct {
		Target string `json:"target"`
	}) (string, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.runs[a.Target]++
		return "ran " + a.Target, nil
	})
	opts.Now = e.clock.Now
	e.gate = approvals.New(store, opts)
	aud := audit.New(e.audit, audit.Options{})
	e.aud = aud
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: methods, Caller: httpserve.CallerFromRequest, Approvals: e.gate,
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))})
	a.AddHook(aud.Hook())
	entries := map[string]identity.TokenEntry{}
	for _, c := range []*toolcall.Caller{alice, bob, carol, selfish} {
		entries[identity.HashToken(tokenFor(c))] = identity.TokenEntry{Subject: c.Subject, Roles: c.Roles}
	}
	tokens, err := identity.NewTokens(entries)
	require.NoError(t, err)
	hs := httpserve.New(httpserve.Options{
		MCPServer: func(transport []mcpadapter.Layer) *mcp.Server {
			srv, _ := a.NewServerWith(&mcp.Implementation{Name: "approvals-test", Version: "1"}, nil, mcpadapter.Layers{Transport: transport})
			return srv
		},
		Tokens:    tokens,
		Approvals: e.gate.Handler(httpserve.RequestCaller),
	})
	srv := httptest.NewServer(hs)
	t.Cleanup(func() { srv.Close(); _ = aud.Close() })
	e.url = srv.URL
	return e
}

// connect opens a go-sdk session as caller; opts may set an elicitation
// handler.
func (e *env) connect(t testing.TB, caller *toolcall.Caller, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return e.connectProto(t, caller, opts, "")
}

// connectProto is connect under a protocol revision ("": the client's
// latest).
func (e *env) connectProto(t testing.TB, caller *toolcall.Caller, opts *mcp.ClientOptions, proto string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	client := mcp.NewClient(&mcp.Implementation{Name: "approvals-test", Version: "1"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp",
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: tokenFor(caller), Next: tr}}}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(); tr.CloseIdleConnections() })
	return cs
}

// call calls tool with target and returns the answer's text and isError.
func call(t testing.TB, cs *mcp.ClientSession, tool, target string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"target": target}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// hold calls wipe with target, which must be held, and returns the id of
// the approval request.
func hold(t testing.TB, cs *mcp.ClientSession, target string) string {
	t.Helper()
	text, _ := call(t, cs, "wipe", target)
	return heldID(t, text)
}

// heldID returns the approval id of a held answer.
func heldID(t testing.TB, text string) string {
	t.Helper()
	const pre = "Approval required: wiping needs an admin (approval "
	require.True(t, strings.HasPrefix(text, pre), "not a held answer: %q", text)
	id, rest, ok := strings.Cut(strings.TrimPrefix(text, pre), ")")
	require.True(t, ok)
	require.Equal(t, ". Call again once it is approved.", rest)
	return id
}

// do sends an HTTP request to the approvals endpoints as caller (nil:
// without credentials) and returns the status and body.
func (e *env) do(t testing.TB, caller *toolcall.Caller, method, path, body string) (int, string) {
	t.Helper()
	token := ""
	if caller != nil {
		token = tokenFor(caller)
	}
	code, b := mcptest.Do(t, context.Background(), method, e.url+path, token, body)
	return code, string(b)
}

// tWriter sends logs to the test's log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
