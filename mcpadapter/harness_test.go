package mcpadapter_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// Protocol revisions the SDK serves (docs/contract.md §6).
const (
	proto20250618 = "2025-06-18"
	proto20251125 = "2025-11-25"
	proto20260728 = "2026-07-28"
)

var protocols = []string{proto20250618, proto20251125, proto20260728}

// setup describes a governed server for one test: the bundled example,
// with files replaced or added, a caller, and test hooks.
type setup struct {
	registry string            // replaces the bundled registry when set
	policies map[string]string // policy files added or replaced (empty content removes)
	caller   *toolcall.Caller
	hooks    []string // test hooks by name, see testHook
	opts     []engine.Option
	// extraHooks are registered after hooks, before the recording hook.
	extraHooks []hooks.Hook
	// methods are registered besides the demo methods.
	methods methods.Map
	// hookTimeout replaces the harness's hook deadline when set, for tests
	// of hooks that outlive it on purpose. The harness's is a minute, only
	// a failure bound (a hook, approval check, limit store or binding that
	// must finish is not cut off by a loaded machine), or 300 ms with the
	// "block" test hook, which always reaches it.
	hookTimeout time.Duration
	// catalog serves prompts and resources (docs/contract.md §16).
	catalog mcpadapter.Catalog
	// limits replaces the adapter's limit store (an in-memory one).
	limits hooks.Limits
	// history replaces the adapter's history store (an in-memory one).
	history hooks.History
}

// governed is a running governed server for one test.
type governed struct {
	eng     *engine.Engine
	adapter *mcpadapter.Adapter
	server  *mcp.Server
	after   *afterLog
	logs    *bytes.Buffer
}

// afterLog records every after hook call.
type afterLog struct {
	mu   sync.Mutex
	ends []hooks.Record
}

func (l *afterLog) record(_ context.Context, _ *hooks.CallContext, end *hooks.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends = append(l.ends, *end)
	return nil
}

func (l *afterLog) outcomes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []string{}
	for _, e := range l.ends {
		out = append(out, string(e.Outcome))
	}
	return out
}

// writeExample copies the bundled example into dir, applying s.
func writeExample(t testing.TB, dir string, s setup) engine.Source {
	t.Helper()
	reg := string(toolgate.ExampleRegistry())
	if s.registry != "" {
		reg = s.registry
	}
	regPath := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(regPath, []byte(reg), 0o644))
	polDir := filepath.Join(dir, "policies")
	require.NoError(t, os.CopyFS(polDir, toolgate.ExamplePolicies()))
	for name, src := range s.policies {
		p := filepath.Join(polDir, name)
		if src == "" {
			require.NoError(t, os.Remove(p))
			continue
		}
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	return engine.Source{Registry: regPath, Policies: polDir}
}

func newGoverned(t testing.TB, s setup) *governed {
	t.Helper()
	src := writeExample(t, t.TempDir(), s)
	eng, err := engine.New(context.Background(), src, append([]engine.Option{engine.WithTimeout(10 * time.Second)}, s.opts...)...)
	require.NoError(t, err)
	g := &governed{eng: eng, after: &afterLog{}, logs: &bytes.Buffer{}}
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: g.logs}, nil))
	methods := demo.Methods()
	for name, m := range s.methods {
		methods[name] = m
	}
	hookTimeout := s.hookTimeout
	if hookTimeout == 0 {
		hookTimeout = time.Minute // a failure bound only
		if slices.Contains(s.hooks, "block") {
			// The blocking hook always reaches the deadline: a short one
			// only makes the test quick.
			hookTimeout = 300 * time.Millisecond
		}
	}
	var ids atomic.Int64 // predictable approval ids: fixtures compare answers byte for byte
	g.adapter = mcpadapter.New(mcpadapter.Options{
		Revisions:   eng,
		Methods:     methods,
		Caller:      mcpadapter.StaticCaller(s.caller),
		Logger:      logger,
		HookTimeout: hookTimeout,
		Catalog:     s.catalog,
		Approvals: approvals.New(store.NewMemoryStore(), approvals.Options{
			NewID: func() string { return fmt.Sprintf("%024x", ids.Add(1)) },
		}),
		Limits:  cmp.Or[hooks.Limits](s.limits, ledger.NewLimiter(store.NewMemoryStore(), nil)),
		History: cmp.Or[hooks.History](s.history, ledger.NewHistory(store.NewMemoryStore(), nil)),
	})
	for _, name := range s.hooks {
		g.adapter.AddHook(testHook(t, name))
	}
	for _, h := range s.extraHooks {
		g.adapter.AddHook(h)
	}
	g.adapter.AddHook(hooks.Hook{Name: "record", After: g.after.record, Prompt: true})
	g.server = g.adapter.NewServer(&mcp.Implementation{Name: "toolgate", Version: "test"}, &mcp.ServerOptions{Logger: logger})
	return g
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// testHook returns a before (and after) hook by name:
//
//	deny:REASON     denies with REASON
//	deny-empty      denies with an empty reason (a failure of the hook)
//	answer:TEXT     answers with a text result
//	fail            returns an error
//	panic           panics
//	block           blocks past its deadline (until the test ends)
//	after-fail      an after hook that fails
//	after-panic     an after hook that panics
func testHook(t testing.TB, spec string) hooks.Hook {
	kind, arg, _ := strings.Cut(spec, ":")
	h := hooks.Hook{Name: spec}
	switch kind {
	case "deny":
		h.Before = func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			return hooks.Deny(arg), nil
		}
	case "deny-empty":
		h.Before = func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			return hooks.Deny(""), nil
		}
	case "answer":
		h.Before = func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			return hooks.Answer(mcpadapter.TextResult(arg, false)), nil
		}
	case "fail":
		h.Before = func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			return hooks.Verdict{}, errors.New("hook failed reading /etc/toolgate/secret.db")
		}
	case "panic":
		h.Before = func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			panic("hook panicked")
		}
	case "block":
		// It ignores the call's context on purpose and returns only when
		// the test ends: a 2 s sleep lost to the 300 ms deadline only most
		// of the time on a loaded machine.
		done := t.Context().Done()
		h.Before = func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			<-done
			return hooks.Allow(), nil
		}
	case "after-fail":
		h.After = func(context.Context, *hooks.CallContext, *hooks.Record) error {
			return errors.New("after hook failed")
		}
	case "after-panic":
		h.After = func(context.Context, *hooks.CallContext, *hooks.Record) error {
			panic("after hook panicked")
		}
	default:
		t.Fatalf("unknown test hook %q", spec)
	}
	return h
}

// rawClient speaks raw JSON-RPC to a server over an in-memory transport, so
// tests can send what no SDK client would (numeric names, a _meta that is
// not an object) and compare responses byte for byte.
type rawClient struct {
	t     testing.TB
	conn  mcp.Connection
	proto string
	id    int64
}

func (g *governed) connectRaw(t testing.TB, proto string) *rawClient {
	t.Helper()
	ctx, ct := serveInMemory(t, g.server)
	conn, err := ct.Connect(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c := &rawClient{t: t, conn: conn, proto: proto}
	if proto != proto20260728 {
		c.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"fixture","version":"1"}}}`, proto))
		msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`))
		require.NoError(t, err)
		require.NoError(t, conn.Write(ctx, msg))
	}
	return c
}

// newProtocolMeta is what a 2026-07-28 client puts in every request's _meta.
var newProtocolMeta = map[string]any{
	mcp.MetaKeyProtocolVersion:    proto20260728,
	mcp.MetaKeyClientCapabilities: map[string]any{},
}

// prepare adapts a request to the client's protocol revision: for
// 2026-07-28 it adds the per-request _meta keys (ok is false when _meta is
// not an object and the request cannot be sent under that revision).
func (c *rawClient) prepare(req string) (string, bool) {
	if c.proto != proto20260728 {
		return req, true
	}
	var m map[string]json.RawMessage
	require.NoError(c.t, json.Unmarshal([]byte(req), &m))
	var params map[string]json.RawMessage
	if raw, ok := m["params"]; ok {
		if json.Unmarshal(raw, &params) != nil || params == nil {
			return "", false
		}
	} else {
		params = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return "", false
		}
	}
	for k, v := range newProtocolMeta {
		meta[k], _ = json.Marshal(v)
	}
	params["_meta"], _ = json.Marshal(meta)
	m["params"], _ = json.Marshal(params)
	b, _ := json.Marshal(m)
	return string(b), true
}

// roundTrip sends one request and returns the encoded response to it.
func (c *rawClient) roundTrip(req string) []byte {
	c.t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(req))
	require.NoError(c.t, err, req)
	r, ok := msg.(*jsonrpc.Request)
	require.True(c.t, ok)
	// A failure bound only: a call under -race on a loaded machine (a
	// megabyte of result through the result rules) can take seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(c.t, c.conn.Write(ctx, msg))
	for {
		in, err := c.conn.Read(ctx)
		require.NoError(c.t, err)
		resp, ok := in.(*jsonrpc.Response)
		if !ok || resp.ID != r.ID {
			continue // a notification or a server request
		}
		b, err := jsonrpc.EncodeMessage(resp)
		require.NoError(c.t, err)
		return b
	}
}

// call sends a tools/call with the given raw params and returns the response.
func (c *rawClient) call(params string) []byte {
	c.id++
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, c.id, params)
	req, ok := c.prepare(req)
	require.True(c.t, ok, "request cannot be sent under %s", c.proto)
	return c.roundTrip(req)
}

// toolText decodes a tools/call response into its result.
func toolResult(t testing.TB, resp []byte) *mcp.CallToolResult {
	t.Helper()
	var r struct {
		Result *mcp.CallToolResult `json:"result"`
		Error  *jsonrpc.Error      `json:"error"`
	}
	require.NoError(t, json.Unmarshal(resp, &r), "%s", resp)
	require.Nil(t, r.Error, "a JSON-RPC error reached the caller: %s", resp)
	require.NotNil(t, r.Result, "%s", resp)
	return r.Result
}

func resultText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok)
	return tc.Text
}

// serveInMemory serves one session of s, through the wire layer, over an
// in-memory transport and returns its client end with the context both
// ends run under; the test's cleanup closes them.
func serveInMemory(t testing.TB, s *mcp.Server) (context.Context, mcp.Transport) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ss, err := s.Connect(ctx, mcpadapter.WrapTransport(st), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	return ctx, ct
}

// connectSDK connects a go-sdk client over an in-memory transport under
// the given protocol revision.
func (g *governed) connectSDK(t testing.TB, proto string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, ct := serveInMemory(t, g.server)
	client := mcp.NewClient(&mcp.Implementation{Name: "conformance", Version: "1"}, opts)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// sdkParams decodes fixture params into what a go-sdk client can send; ok
// is false for params no SDK client would send (a numeric name, a _meta
// that is not an object).
func sdkParams(raw string) (*mcp.CallToolParams, bool) {
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal([]byte(raw), &p) != nil || p.Name == nil {
		return nil, false
	}
	out := &mcp.CallToolParams{Name: *p.Name}
	if len(p.Arguments) > 0 {
		out.Arguments = p.Arguments
	}
	if len(p.Meta) > 0 {
		if json.Unmarshal(p.Meta, &out.Meta) != nil || out.Meta == nil {
			return nil, false
		}
	}
	return out, true
}
