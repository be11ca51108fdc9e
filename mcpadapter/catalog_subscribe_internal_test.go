package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// countingCatalog serves one template matching every file:///n/ URI and
// counts the upstream subscriptions it holds.
type countingCatalog struct {
	mu   sync.Mutex
	live map[string]int
	bad  error // an unsubscribe of what was not subscribed
}

func (c *countingCatalog) GetPrompt(context.Context, *registry.Prompt, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return nil, errors.New("no prompts")
}
func (c *countingCatalog) Resources(context.Context) []CatalogResource { return nil }
func (c *countingCatalog) Templates(context.Context) []CatalogTemplate {
	return []CatalogTemplate{{Upstream: "up", Template: &mcp.ResourceTemplate{URITemplate: "file:///n/{x}", Name: "n"}}}
}
func (c *countingCatalog) ReadResource(context.Context, string, *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("no reads")
}
func (c *countingCatalog) Subscribe(_ context.Context, _, uri string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[uri]++
	return nil
}
func (c *countingCatalog) Unsubscribe(_ context.Context, _, uri string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[uri] <= 0 {
		c.bad = fmt.Errorf("unsubscribed %s, not subscribed", uri)
		return c.bad
	}
	if c.live[uri]--; c.live[uri] == 0 {
		delete(c.live, uri)
	}
	return nil
}
func (c *countingCatalog) Complete(context.Context, string, *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return nil, errors.New("no completions")
}
func (c *countingCatalog) Offers() CatalogOffers {
	return CatalogOffers{Resources: true, Subscribe: true}
}
func (c *countingCatalog) Watch(func(CatalogEvent)) func() { return func() {} }

func (c *countingCatalog) held() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.live {
		n += v
	}
	return n, c.bad
}

// TestSubscriptionFloodOnOneSession: one session's subscribes of distinct
// URIs, many at once, mixed with unsubscribes, never hold more than
// MaxSubscriptionsPerSession (those past it get the refusal, nothing
// else); what the adapter holds is what the upstream holds; and when the
// session ends, neither holds anything (run under -race).
func TestSubscriptionFloodOnOneSession(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(t.Context(), engine.Source{FS: fstest.MapFS{
		"registry.yaml":     {Data: []byte("tools: []\n")},
		"policy/grant.rego": {Data: []byte("package toolgate.grant\n\ndefault resource := true\n")},
	}, Registry: "registry.yaml", Policies: "policy"}, engine.WithTimeout(time.Minute)) // the deadline is not what is tested
	require.NoError(t, err)
	cat := &countingCatalog{live: map[string]int{}}
	a := New(Options{Revisions: eng, Methods: noMethods{}, Catalog: cat, Caller: StaticCaller(&toolcall.Caller{Subject: "mallory"})})
	server := a.NewServer(&mcp.Implementation{Name: "front"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mallory"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)

	const workers, each = 8, MaxSubscriptionsPerSession / 4 // twice the cap in all
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				uri := fmt.Sprintf("file:///n/%d-%d", w, i)
				err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri})
				var rpcErr *jsonrpc.Error
				switch {
				case err == nil:
					if i%16 == 0 {
						assert.NoError(t, cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: uri}))
					}
				case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidRequest && rpcErr.Message == AnswerTooManySubscriptions:
				default:
					t.Errorf("subscribe %s: %v", uri, err)
				}
				if _, subs := a.catalog.held(); subs > MaxSubscriptionsPerSession {
					t.Errorf("%d subscriptions held, over %d", subs, MaxSubscriptionsPerSession)
				}
			}
		})
	}
	wg.Wait()
	_, subs := a.catalog.held()
	assert.Equal(t, MaxSubscriptionsPerSession, subs, "the flood filled the session to its cap, no further")
	up, bad := cat.held()
	require.NoError(t, bad)
	assert.Equal(t, subs, up, "the upstream holds what the session does")

	require.NoError(t, cs.Close())
	require.NoError(t, ss.Wait())
	require.Eventually(t, func() bool {
		sessions, subs := a.catalog.held()
		up, _ := cat.held()
		return sessions == 0 && subs == 0 && up == 0
	}, time.Minute, 10*time.Millisecond, "nothing left once the session ended")
	_, bad = cat.held()
	require.NoError(t, bad)
}

type noMethods struct{}

func (noMethods) Method(string) (methods.Method, bool) { return nil, false }
