package upstream

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/registry"
)

// catalogServer is an in-process upstream with one prompt, the resources
// uris and a template; subs counts the subscribe requests it receives.
func catalogServer(uris []string, subs, unsubs chan string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "cat", Version: "v0"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			select {
			case subs <- req.Params.URI:
			default:
			}
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			select {
			case unsubs <- req.Params.URI:
			default:
			}
			return nil
		},
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"done"}}}, nil
		},
	})
	srv.AddPrompt(&mcp.Prompt{Name: "hello", Description: "says hello", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
		})
	for _, u := range uris {
		srv.AddResource(&mcp.Resource{URI: u, Name: u}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "from cat"}}}, nil
		})
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///t/{x}", Name: "t"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "templated"}}}, nil
	})
	return srv
}

func inMemory(name string, srv *mcp.Server) Config {
	return Config{Name: name, Import: true, Timeout: 5 * time.Second, Transport: func() mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			panic(err)
		}
		return ct
	}}
}

// TestCatalogPool (docs/contract.md §16): prompts imported as PREFIX +
// PROMPT (default NAME., "" allowed); a URI two upstreams list belongs to
// the first in configuration order, with a warning; reads, prompts and
// completions reach the owner under its own names; toolgate subscribes an
// upstream to a URI once, and unsubscribes it when the last subscriber is
// gone; the upstream's resources/updated reaches the watchers.
func TestCatalogPool(t *testing.T) {
	t.Parallel()
	subs, unsubs := make(chan string, 4), make(chan string, 4)
	a := catalogServer([]string{"file:///shared", "file:///a-only"}, subs, unsubs)
	b := catalogServer([]string{"file:///shared", "file:///b-only"}, make(chan string, 4), make(chan string, 4))
	empty := ""
	logs := &proctest.Buffer{}
	cfgA, cfgB := inMemory("a", a), inMemory("b", b)
	cfgB.Prefix = &empty
	p, err := NewPool([]Config{cfgA, cfgB}, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	ctx := context.Background()

	prompts := p.ImportedPrompts(ctx)
	require.Len(t, prompts, 2)
	assert.Equal(t, "a.hello", prompts[0].Name, "default prefix NAME.")
	assert.Equal(t, "hello", prompts[1].Name, `prefix ""`)
	assert.Equal(t, []registry.PromptArgument{{Name: "who", Required: true}}, prompts[0].Arguments)
	assert.Equal(t, "upstream:a", prompts[0].Section, "closed by default")
	_, err = MergeImports(nil, nil, append(prompts, registry.Prompt{Name: "hello", Upstream: "c"}))
	require.ErrorContains(t, err, `prompt "hello" is defined by upstream b and by upstream c`)

	res := p.Resources(ctx)
	owner := map[string]string{}
	for _, r := range res {
		owner[r.Resource.URI] = r.Upstream
	}
	assert.Equal(t, map[string]string{"file:///shared": "a", "file:///a-only": "a", "file:///b-only": "b"}, owner)
	assert.Contains(t, logs.String(), "two upstreams list one uri")
	assert.Contains(t, logs.String(), "ignored=b")
	tmpl := p.Templates(ctx)
	require.Len(t, tmpl, 1, "the template of b is a's")
	assert.Equal(t, "a", tmpl[0].Upstream)
	assert.True(t, p.Offers().Subscribe && p.Offers().Prompts && p.Offers().Completions)

	got, err := p.GetPrompt(ctx, &prompts[0], &mcp.GetPromptParams{Name: "a.hello", Arguments: map[string]string{"who": "ann"}})
	require.NoError(t, err)
	assert.Equal(t, "hello ann", got.Messages[0].Content.(*mcp.TextContent).Text, "sent under the upstream's own name")
	rd, err := p.ReadResource(ctx, "b", &mcp.ReadResourceParams{URI: "file:///b-only"})
	require.NoError(t, err)
	assert.Equal(t, "from cat", rd.Contents[0].Text)
	_, err = p.Complete(ctx, "a", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "hello"}, Argument: mcp.CompleteParamsArgument{Name: "who"}})
	require.NoError(t, err)

	events := make(chan mcpadapter.CatalogEvent, 4)
	stop := p.Watch(func(ev mcpadapter.CatalogEvent) { events <- ev })
	defer stop()
	require.NoError(t, p.Subscribe(ctx, "a", "file:///shared"))
	require.NoError(t, p.Subscribe(ctx, "a", "file:///shared"))
	// Under 2026-07-28 the subscription is a subscriptions/listen stream
	// the client opens in the background: wait for the upstream to have it.
	select {
	case uri := <-subs:
		assert.Equal(t, "file:///shared", uri)
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream was not subscribed")
	}
	// The server records the subscription just after its handler returns:
	// an update sent in between reaches nobody, so send again until one
	// arrives (each attempt waits for the event, not for time; the
	// attempts stop at the failure bound, not after a count that a loaded
	// machine could use up).
	var upd *mcpadapter.CatalogEvent
	for bound := time.Now().Add(failureBound); upd == nil && time.Now().Before(bound); {
		require.NoError(t, a.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///shared"}))
		select {
		case ev := <-events:
			upd = &ev
		case <-time.After(500 * time.Millisecond):
		}
	}
	require.NotNil(t, upd, "no resources/updated event")
	assert.Equal(t, mcpadapter.CatalogEvent{Kind: mcpadapter.ResourceUpdated, Upstream: "a", URI: "file:///shared"}, *upd)
	require.NoError(t, p.Unsubscribe(ctx, "a", "file:///shared"))
	p.cat.mu.Lock()
	remaining := p.cat.subs[[2]string{"a", "file:///shared"}].n
	p.cat.mu.Unlock()
	assert.Equal(t, 1, remaining, "a subscriber remains: the upstream stays subscribed")
	require.NoError(t, p.Unsubscribe(ctx, "a", "file:///shared"))
	select {
	case uri := <-unsubs:
		assert.Equal(t, "file:///shared", uri, "the last one is gone: unsubscribed upstream")
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream was not unsubscribed")
	}
	assert.Empty(t, unsubs, "once")
	assert.Empty(t, subs, "one upstream subscription per URI")
}

// TestMergeImportsToolConflict: two upstreams defining one tool name (a
// prefix "" on both) is a load error naming both; a registry row keeps its
// name over an import (MergeRows).
func TestMergeImportsToolConflict(t *testing.T) {
	t.Parallel()
	rows := []registry.Tool{
		{Name: "read", Method: "upstream:a/read", Imported: &registry.Imported{Upstream: "a"}},
		{Name: "read", Method: "upstream:b/read", Imported: &registry.Imported{Upstream: "b"}},
	}
	_, err := MergeImports(nil, rows, nil)
	require.ErrorContains(t, err, `tool "read" is defined by upstream a and by upstream b`)
	reg, err := MergeImports(nil, rows[:1], []registry.Prompt{{Name: "p", Upstream: "a"}})
	require.NoError(t, err)
	assert.Len(t, reg.Tools, 1)
	assert.Equal(t, "p", reg.Prompts[0].Name)

	_, err = NewPool([]Config{{Name: "s", Command: []string{"x"}, Prefix: new("a b")}}, nil)
	require.ErrorIs(t, err, ErrConfig, "a prefix with characters no tool name has")
	row, _, err := importRow(&Config{Name: "s", Prefix: new("")}, mcpTool("t", `{"type":"object"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "t", row.Name)
	row, _, err = importRow(&Config{Name: "s"}, mcpTool("t", `{"type":"object"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "s.t", row.Name, "the default is today's NAME.TOOL")
}

// TestCatalogRequestsCarryNoClientMeta: prompts/get, resources/read and
// completion/complete reach the upstream without the client's _meta (the
// policy decided on its bounded form; the catalog session is every
// caller's), as a relayed tools/call carries none of it.
func TestCatalogRequestsCarryNoClientMeta(t *testing.T) {
	t.Parallel()
	got := make(chan mcp.Meta, 3)
	srv := mcp.NewServer(&mcp.Implementation{Name: "cat", Version: "v0"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			got <- req.Params.Meta
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"done"}}}, nil
		},
	})
	srv.AddPrompt(&mcp.Prompt{Name: "hello"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		got <- req.Params.Meta
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "file:///r", Name: "r"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		got <- req.Params.Meta
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "r"}}}, nil
	})
	p, err := NewPool([]Config{inMemory("a", srv)}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	ctx := context.Background()
	client := func() mcp.Meta {
		return mcp.Meta{"festi/secret": "s3cr3t", "progressToken": "tok", "io.modelcontextprotocol/logLevel": "debug"}
	}

	prompts := p.ImportedPrompts(ctx)
	require.Len(t, prompts, 1)
	_, err = p.GetPrompt(ctx, &prompts[0], &mcp.GetPromptParams{Name: "a.hello", Meta: client()})
	require.NoError(t, err)
	_, err = p.ReadResource(ctx, "a", &mcp.ReadResourceParams{URI: "file:///r", Meta: client()})
	require.NoError(t, err)
	_, err = p.Complete(ctx, "a", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "hello"},
		Argument: mcp.CompleteParamsArgument{Name: "who"}, Meta: client()})
	require.NoError(t, err)
	for range 3 {
		m := <-got
		for k := range client() {
			assert.NotContains(t, m, k)
		}
	}
}
