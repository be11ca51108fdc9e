package upstream

//lint:file-ignore SA1019 sampling is deprecated from protocol revision 2026-07-28 on; earlier revisions have it, and toolgate bridges it

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// askingUpstream is a stateful streamable HTTP upstream (2025-11-25) whose
// interact tool asks its client to sample, and answers with the sample;
// cancelled is closed when a call of it is cancelled (it receives
// notifications/cancelled).
func askingUpstream(t *testing.T) (Config, <-chan struct{}) {
	cancelled := make(chan struct{})
	var once sync.Once
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "interact"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Label string `json:"label"`
	}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Label}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				once.Do(func() { close(cancelled) })
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return Config{Name: "up", URL: ts.URL, Timeout: time.Minute}, cancelled
}

// TestRelayBridgeWait (docs/contract.md §19): a client of 2026-07-28 that
// never retries after the input-required result of an older upstream's
// sampling request: once the wait (Options.InputWait) is over, the call is
// cancelled upstream, it ends once for the hooks (cancelled, not answered),
// and the retry that comes after is refused as an invalid requestState.
func TestRelayBridgeWait(t *testing.T) {
	t.Parallel()
	up, cancelled := askingUpstream(t)
	eng, err := engine.New(t.Context(), relayRegistry, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	var ends atomic.Int32
	ended := make(chan *hooks.Record, 4)
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: newPool(t, up), InputWait: time.Nanosecond,
		Caller: func(context.Context, mcp.Request) (*toolcall.Caller, string) {
			return &toolcall.Caller{Subject: "alice"}, hooks.SourceLocal
		}})
	a.AddHook(hooks.Hook{Name: "ends", Prompt: true, After: func(_ context.Context, _ *hooks.CallContext, rec *hooks.Record) error {
		ends.Add(1)
		ended <- rec
		return nil
	}})
	ct, st := mcp.NewInMemoryTransports()
	_, err = a.NewServer(&mcp.Implementation{Name: "front"}, nil).Connect(t.Context(), st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "never asked"}}, nil
		},
	})
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), failureBound)
	defer cancel()

	params := &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L"}}
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.Len(t, res.InputRequests, 1)
	require.NotEmpty(t, res.RequestState)

	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the upstream call was not cancelled once the wait was over")
	}
	var rec *hooks.Record
	select {
	case rec = <-ended:
	case <-ctx.Done():
		t.Fatal("the call did not end")
	}
	require.Equal(t, toolcall.OutcomeFailed, rec.Outcome, "%v", rec.Err)
	require.ErrorContains(t, rec.Err, "did not answer the input request in time")

	answers := mcp.InputResponseMap{}
	for k := range res.InputRequests {
		answers[k] = &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "interact", Arguments: params.Arguments, InputResponses: answers, RequestState: res.RequestState})
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, err, &rpcErr)
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code)
	require.Equal(t, int32(1), ends.Load(), "one call for the hooks, the late retry none")
}

// TestRelayBridgeOneCall (docs/contract.md §19): a call bridged for a
// 2026-07-28 client over three rounds (sampling, elicitation, roots) is
// one call for the hooks: they run once, and see its last result, never
// an input-required one.
func TestRelayBridgeOneCall(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	eng, err := engine.New(t.Context(), relayRegistry, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	var befores, afters atomic.Int32
	var last atomic.Pointer[hooks.Record]
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: newPool(t, httpUp),
		Caller: func(context.Context, mcp.Request) (*toolcall.Caller, string) {
			return &toolcall.Caller{Subject: "alice"}, hooks.SourceLocal
		}})
	a.AddHook(hooks.Hook{Name: "count", Prompt: true,
		Before: func(context.Context, *hooks.CallContext) (hooks.Verdict, error) {
			befores.Add(1)
			return hooks.Verdict{}, nil
		},
		After: func(_ context.Context, _ *hooks.CallContext, rec *hooks.Record) error {
			afters.Add(1)
			last.Store(rec)
			return nil
		}})
	ct, st := mcp.NewInMemoryTransports()
	_, err = a.NewServer(&mcp.Implementation{Name: "front"}, nil).Connect(t.Context(), st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "alice"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "s"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "e"}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///r"})
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), failureBound)
	defer cancel()
	require.Equal(t, "L sampled=s elicited=accept:e roots=file:///r",
		callText(ctx, t, cs, &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": "L"}}))
	require.Equal(t, int32(1), befores.Load())
	require.Equal(t, int32(1), afters.Load())
	rec := last.Load()
	require.Equal(t, toolcall.OutcomeResult, rec.Outcome)
	require.Nil(t, rec.Result.InputRequests)
}

// TestRelayBridgeIsolation (docs/contract.md §19): two 2026-07-28 callers
// with calls in flight at once to an older upstream, each bridged over
// three rounds: every call gets its own caller's answers (run it with
// -race). Fewer calls than a caller's share of sessions, so none is
// refused.
func TestRelayBridgeIsolation(t *testing.T) {
	t.Parallel()
	httpUp, _ := httpConfig(t, "up")
	f := newRelayFront(t, httpUp)
	const calls = 12
	var wg sync.WaitGroup
	for _, s := range []string{"alice", "bob"} {
		cs, _ := f.connectRevision(s, nil, "2026-07-28")
		for i := range calls {
			wg.Go(func() {
				label := fmt.Sprintf("%s-%d", s, i)
				ctx, cancel := context.WithTimeout(t.Context(), failureBound)
				defer cancel()
				want := fmt.Sprintf("%s sampled=%s:%s elicited=accept:%s:%s roots=file:///%s", label, s, label, s, label, s)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "interact", Arguments: map[string]any{"label": label}})
				if assert.NoError(t, err) && assert.Len(t, res.Content, 1) {
					assert.Equal(t, want, res.Content[0].(*mcp.TextContent).Text)
				}
			})
		}
	}
	wg.Wait()
}
