package mcpadapter_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// secRegistry: two rows every signed-in caller has by the base decision.
const secRegistry = `tools:
  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string, required: true }] }
  - { name: execUrl, method: demo.execUrl, driver: url, arguments: [{ name: url, type: string, required: true }] }
`

// secServer is a governed server over files in a temp dir: the registry
// and one grant policy, with the given adapter options.
func secServer(t *testing.T, policy string, opts mcpadapter.Options) (*engine.Engine, *mcpadapter.Adapter, *mcp.Server, string) {
	t.Helper()
	dir := t.TempDir()
	src := engine.Source{Registry: filepath.Join(dir, "registry.yaml"), Policies: filepath.Join(dir, "rego")}
	require.NoError(t, os.Mkdir(src.Policies, 0o755))
	require.NoError(t, os.WriteFile(src.Registry, []byte(secRegistry), 0o600))
	grant := filepath.Join(src.Policies, "grant.rego")
	require.NoError(t, os.WriteFile(grant, []byte(policy), 0o600))
	eng, err := engine.New(context.Background(), src, engine.WithTimeout(10*time.Second), engine.WithSettle(time.Millisecond))
	require.NoError(t, err)
	opts.Revisions, opts.Methods = eng, demo.Methods()
	a := mcpadapter.New(opts)
	return eng, a, a.NewServer(&mcp.Implementation{Name: "toolgate", Version: "test"}, nil), grant
}

// connectAs connects a go-sdk client whose clientInfo name is name.
func connectAs(t *testing.T, s *mcp.Server, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, ct := serveInMemory(t, s)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto20251125})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestListFallbackNone: a grant policy that parses _meta strictly
// fails on a malformed value. With the default fallback the listing shows
// the base decision, hidden tools included (the documented trade-off);
// with ListFallbackNone it shows nothing, so a client cannot reveal what
// the override hides. A call is refused either way (step 3).
func TestListFallbackNone(t *testing.T) {
	t.Parallel()
	const strict = `package toolgate.grant

default level := 0

level := to_number(input.request.meta["x/level"]) if input.request.meta["x/level"]

granted := {t.name | some t in input.tools; t.base; t.name != "execUrl"; level >= 0}
`
	alice := &toolcall.Caller{Subject: "alice", Roles: []string{}}
	malformed := mcp.Meta{"x/level": "not a number"}
	for _, tc := range []struct {
		name     string
		fallback hooks.ListFallback
		failing  []string
	}{
		{"base (default)", hooks.ListFallbackBase, []string{"echo", "execUrl"}},
		{"none", hooks.ListFallbackNone, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, s, _ := secServer(t, strict, mcpadapter.Options{Caller: mcpadapter.StaticCaller(alice), ListFallback: tc.fallback})
			cs := connectAs(t, s, "alice", nil)
			ctx := context.Background()

			res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Meta: mcp.Meta{"x/level": "3"}})
			require.NoError(t, err)
			require.Equal(t, []string{"echo"}, toolNames(res), "the override hides execUrl")

			res, err = cs.ListTools(ctx, &mcp.ListToolsParams{Meta: malformed})
			require.NoError(t, err)
			require.Equal(t, tc.failing, toolNames(res))

			call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execUrl", Arguments: map[string]any{"url": "http://x"}, Meta: malformed})
			require.NoError(t, err)
			require.True(t, call.IsError)
			require.Equal(t, "Error: Tool access could not be verified.", call.Content[0].(*mcp.TextContent).Text)
		})
	}
}

// TestListChangedOnlyToSessionsWhoseListingChanged: four sessions
// (alice and bob, who listed; a stranger who listed as nobody; quiet, who
// never listed). Each reload notifies exactly the sessions whose caller's
// listing it changed; the stranger and quiet get nothing.
func TestListChangedOnlyToSessionsWhoseListingChanged(t *testing.T) {
	t.Parallel()
	policy := func(alice, bob string) string {
		return "package toolgate.grant\n\ngrants := {\"alice\": " + alice + ", \"bob\": " + bob + "}\n\ngranted := {x | some x in grants[input.caller.subject]}\n"
	}
	// The caller is the client's name: alice, bob and quiet are signed in;
	// anyone else is nobody.
	byName := func(_ context.Context, req mcp.Request) (*toolcall.Caller, string) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().ClientInfo == nil {
			return nil, hooks.SourceLocal
		}
		switch name := ss.InitializeParams().ClientInfo.Name; name {
		case "alice", "bob", "quiet":
			return &toolcall.Caller{Subject: name, Roles: []string{}}, hooks.SourceLocal
		}
		return nil, hooks.SourceLocal
	}
	eng, a, s, grant := secServer(t, policy(`["echo"]`, `["echo"]`), mcpadapter.Options{Caller: byName})

	type client struct {
		cs    *mcp.ClientSession
		count atomic.Int64
		got   chan struct{}
	}
	clients := map[string]*client{}
	for _, name := range []string{"alice", "bob", "stranger", "quiet"} {
		c := &client{got: make(chan struct{}, 16)}
		c.cs = connectAs(t, s, name, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				c.count.Add(1)
				c.got <- struct{}{}
			},
		})
		clients[name] = c
	}
	ctx := context.Background()
	for name, want := range map[string][]string{"alice": {"echo"}, "bob": {"echo"}, "stranger": {}} {
		res, err := clients[name].cs.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, want, toolNames(res), name)
	}

	reload := func(alice, bob string) int {
		t.Helper()
		old := eng.Current()
		tmp := grant + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(policy(alice, bob)), 0o600))
		require.NoError(t, os.Rename(tmp, grant))
		changed, err := eng.Reload(ctx)
		require.NoError(t, err)
		require.True(t, changed)
		return a.NotifyListingChanged(ctx, s, old, eng.Current())
	}
	wait := func(name string) {
		t.Helper()
		select {
		case <-clients[name].got:
		case <-time.After(time.Minute): // a failure bound only
			t.Fatalf("%s got no notifications/tools/list_changed", name)
		}
	}

	require.Equal(t, 1, reload(`["execUrl"]`, `["echo"]`), "only alice's listing changed")
	wait("alice")
	require.Equal(t, 1, reload(`["execUrl"]`, `["execUrl"]`), "only bob's listing changed")
	wait("bob")
	require.Zero(t, reload(`["execUrl"]`, `["execUrl"]`+" ") /* a new hash, the same listings */)
	require.Equal(t, 2, reload(`["echo", "execUrl"]`, `["echo", "execUrl"]`), "both listings changed")
	wait("alice")
	wait("bob")

	// Every notification sent is in by now: alice and bob have the last
	// round's, sent after every earlier one on their sessions.
	require.Equal(t, int64(2), clients["alice"].count.Load(), "alice: rounds 1 and 4")
	require.Equal(t, int64(2), clients["bob"].count.Load(), "bob: rounds 2 and 4")
	require.Zero(t, clients["stranger"].count.Load(), "a session listing as nobody is never notified")
	require.Zero(t, clients["quiet"].count.Load(), "a session that never listed is never notified")
}

// TestListenStreamNotified: under the 2026-07-28 revision a client
// hears of changes on its subscriptions/listen stream; the stream's caller
// is its listing caller, and it is notified when that caller's listing
// changes.
func TestListenStreamNotified(t *testing.T) {
	t.Parallel()
	policy := func(granted string) string { return "package toolgate.grant\n\ngranted := " + granted + "\n" }
	alice := &toolcall.Caller{Subject: "alice", Roles: []string{}}
	eng, a, s, grant := secServer(t, policy(`{"echo"}`), mcpadapter.Options{Caller: mcpadapter.StaticCaller(alice)})
	got := make(chan struct{}, 4)
	ctx, ct := serveInMemory(t, s)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { got <- struct{}{} },
	}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto20260728})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"echo"}, toolNames(res))

	old := eng.Current()
	require.NoError(t, os.WriteFile(grant+".tmp", []byte(policy(`{"execUrl"}`)), 0o600))
	require.NoError(t, os.Rename(grant+".tmp", grant))
	_, err = eng.Reload(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, a.NotifyListingChanged(ctx, s, old, eng.Current()))
	select {
	case <-got:
	case <-time.After(time.Minute): // a failure bound only
		t.Fatal("the listen stream got no notifications/tools/list_changed")
	}
}
