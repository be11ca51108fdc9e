package upstream

//lint:file-ignore SA1019 logging and sampling are deprecated from protocol revision 2026-07-28 on; earlier revisions have them

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// relayMarker is what the upstream sends in every message of a call.
const relayMarker = "SECRET-ABC"

// redactFront is a governed server in front of p, with relayRegistry's
// rows and the result rules of policy, whose sessions are alice's.
func redactFront(t *testing.T, p *Pool, policy string) *mcp.Server {
	t.Helper()
	fsys := fstest.MapFS{}
	for k, v := range relayRegistry.FS.(fstest.MapFS) {
		fsys[k] = v
	}
	fsys["policy/result.rego"] = &fstest.MapFile{Data: []byte(policy)}
	eng, err := engine.New(t.Context(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policy"}, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: p, Logging: true,
		Caller: func(context.Context, mcp.Request) (*toolcall.Caller, string) {
			return &toolcall.Caller{Subject: "alice"}, hooks.SourceLocal
		}})
	return a.NewServer(&mcp.Implementation{Name: "front"}, nil)
}

// seen is everything a client was sent, as text.
type seen struct {
	mu  sync.Mutex
	all []string
}

func (s *seen) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, fmt.Sprintf(format, args...))
}

func (s *seen) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.all...)
}

// connectSeen connects a client that records what it is sent.
func connectSeen(t *testing.T, server *mcp.Server) (*mcp.ClientSession, *seen) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	_, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	got := &seen{}
	client := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			got.add("sampling %s", mustJSON(t, req.Params))
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			got.add("elicitation %s", mustJSON(t, req.Params))
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "ok"}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			got.add("log %s", mustJSON(t, req.Params))
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got.add("progress %s", mustJSON(t, req.Params))
		},
	})
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyRevision})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}))
	return cs, got
}

// TestRelayRedacted (docs/limits.md "Result rules"): under a redact rule,
// nothing the upstream relays to the client during a call carries a
// match — its log message, its progress messages, its sampling and
// elicitation requests — over streamable HTTP and stdio; the client's
// progress token is its own, never rewritten.
func TestRelayRedacted(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	for name, up := range map[string]Config{"http": httpUp, "stdio": stdioConfig("up")} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			server := redactFront(t, newPool(t, up), "package toolgate.result\n\nredact contains `SECRET-[A-Z]+`\n")
			cs, got := connectSeen(t, server)
			params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L " + relayMarker}}
			params.SetProgressToken("tok " + relayMarker)
			res, err := cs.CallTool(t.Context(), params)
			require.NoError(t, err)
			assert.Equal(t, "L [redacted] sampled=ok elicited=accept:ok roots=", res.Content[0].(*mcp.TextContent).Text)
			want := []string{"sampling", "elicitation", "log", "progress", "progress"}
			var kinds []string
			require.Eventually(t, func() bool { return len(got.snapshot()) >= len(want) }, failureBound, time.Millisecond)
			for _, m := range got.snapshot() {
				kind, body, _ := strings.Cut(m, " ")
				kinds = append(kinds, kind)
				if kind == "progress" {
					body = strings.Replace(body, `"progressToken":"tok `+relayMarker+`"`, "", 1)
				}
				assert.NotContains(t, body, relayMarker, "%s", m)
				assert.Contains(t, body, "[redacted]", "%s", m)
			}
			assert.ElementsMatch(t, want, kinds)
		})
	}
}

// TestRelayWithheld: a deny of the result rules withholds a relayed
// message too: the notification is not sent, the upstream's request is
// refused (input.result is {method, params}).
func TestRelayWithheld(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	server := redactFront(t, newPool(t, httpUp), `package toolgate.result

deny contains "no sampling" if input.result.method == "sampling/createMessage"

deny contains "no log" if input.result.params.data == "L"
`)
	cs, got := connectSeen(t, server)
	params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L"}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(t.Context(), params)
	require.NoError(t, err)
	assert.Equal(t, "L sampled=error elicited=accept:ok roots=", res.Content[0].(*mcp.TextContent).Text)
	require.Eventually(t, func() bool { return len(got.snapshot()) >= 3 }, failureBound, time.Millisecond)
	var kinds []string
	for _, m := range got.snapshot() {
		kind, _, _ := strings.Cut(m, " ")
		kinds = append(kinds, kind)
	}
	assert.ElementsMatch(t, []string{"elicitation", "progress", "progress"}, kinds)
}
