package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// testCatalog is a Catalog of fixed prompts, resources and templates of
// one upstream "up": what the adapter decides on, without a process.
type testCatalog struct{}

var (
	testPrompts = []registry.Prompt{
		{Name: "up.public", Upstream: "up", Prompt: "public", Description: "for everyone"},
		{Name: "up.secret", Upstream: "up", Prompt: "secret", Description: "not for contractors",
			Arguments: []registry.PromptArgument{{Name: "topic", Required: true}}},
		{Name: "up.rewards", Upstream: "up", Prompt: "rewards", Section: "rewards"},
	}
	testResources = []mcpadapter.CatalogResource{
		{Upstream: "up", Resource: &mcp.Resource{URI: "file:///public/a.txt", Name: "a.txt", MIMEType: "text/plain"}},
		{Upstream: "up", Resource: &mcp.Resource{URI: "file:///secret/b.txt", Name: "b.txt", MIMEType: "text/plain"}},
		{Upstream: "up", Section: "rewards", Resource: &mcp.Resource{URI: "file:///rewards/c.txt", Name: "c.txt"}},
	}
	testTemplates = []mcpadapter.CatalogTemplate{
		{Upstream: "up", Template: &mcp.ResourceTemplate{URITemplate: "file:///notes/{name}", Name: "notes"}},
	}
)

func (testCatalog) GetPrompt(_ context.Context, p *registry.Prompt, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "prompt " + p.Prompt}}}}, nil
}
func (testCatalog) Resources(context.Context) []mcpadapter.CatalogResource { return testResources }
func (testCatalog) Templates(context.Context) []mcpadapter.CatalogTemplate { return testTemplates }
func (testCatalog) ReadResource(_ context.Context, _ string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: p.URI, Text: "content of " + p.URI}}}, nil
}
func (testCatalog) Subscribe(context.Context, string, string) error   { return nil }
func (testCatalog) Unsubscribe(context.Context, string, string) error { return nil }
func (testCatalog) Complete(context.Context, string, *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"x"}}}, nil
}
func (testCatalog) Offers() mcpadapter.CatalogOffers {
	return mcpadapter.CatalogOffers{Prompts: true, Resources: true, Subscribe: true, Completions: true}
}
func (testCatalog) Watch(func(mcpadapter.CatalogEvent)) func() { return func() {} }

// catalogGrant hides a prompt, a folder and every templated resource from
// contractors.
const catalogGrant = `package toolgate.grant

prompts := {p.name | some p in input.prompts; p.base; p.name != "up.secret"} if {
	"contractor" in input.caller.roles
}

resource := false if {
	"contractor" in input.caller.roles
	startswith(input.resource.uri, "file:///secret/")
}

resource := false if {
	"contractor" in input.caller.roles
	input.resource.template != null
}
`

func newCatalogGoverned(t testing.TB, c *toolcall.Caller, cache bool) *governed {
	hook := engine.WithRegistryHook(func(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
		out := *reg
		out.Prompts = testPrompts
		return &out, nil
	})
	return newGoverned(t, setup{caller: c, catalog: testCatalog{}, policies: map[string]string{"catalog.rego": catalogGrant},
		opts: []engine.Option{engine.WithDecisionCache(cache), hook}})
}

// request sends one request of any method with raw params.
func (c *rawClient) request(method, params string) []byte {
	c.id++
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, params)
	req, ok := c.prepare(req)
	require.True(c.t, ok, "request cannot be sent under %s", c.proto)
	return c.roundTrip(req)
}

// listed returns the names (or URIs) a listing holds.
func listed(t *testing.T, resp []byte, field, key string) []string {
	t.Helper()
	var r struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal(resp, &r), string(resp))
	var items []map[string]any
	require.NoError(t, json.Unmarshal(r.Result[field], &items), string(resp))
	var out []string
	for _, it := range items {
		out = append(out, it[key].(string))
	}
	return out
}

// TestHiddenIsAbsentForEveryCallerCatalog extends hidden ≡ absent to
// prompts and resources (docs/contract.md §16): for every kind of caller,
// with the decision cache on and off, under the oldest and the newest
// protocol revision, every prompt its prompts/list hides answers
// prompts/get and completion/complete byte for byte like a name no prompt
// has, and every resource or template its listings hide answers
// resources/read, resources/subscribe and completion/complete like a URI
// nothing serves (apart from id and the echoed name), for fixed and random
// arguments and _meta; and the answer for what does not exist is the same
// bytes whoever asks.
func TestHiddenIsAbsentForEveryCallerCatalog(t *testing.T) {
	t.Parallel()
	absentAnswers := map[string]string{} // by proto, method and case
	allPrompts := []string{"up.public", "up.secret", "up.rewards"}
	allURIs := []string{"file:///public/a.txt", "file:///secret/b.txt", "file:///rewards/c.txt", "file:///notes/today"}
	for _, cache := range []bool{true, false} {
		for _, ck := range callerKinds {
			g := newCatalogGoverned(t, ck.caller, cache)
			r := rand.New(rand.NewPCG(uint64(len(ck.name)), 11))
			for _, proto := range []string{proto20250618, proto20260728} {
				c := g.connectRaw(t, proto)
				prompts := listed(t, c.request("prompts/list", `{}`), "prompts", "name")
				uris := listed(t, c.request("resources/list", `{}`), "resources", "uri")
				if slices.Contains(listed(t, c.request("resources/templates/list", `{}`), "resourceTemplates", "uriTemplate"), "file:///notes/{name}") {
					uris = append(uris, "file:///notes/today")
				}
				var hiddenPrompts, hiddenURIs []string
				for _, p := range allPrompts {
					if !slices.Contains(prompts, p) {
						hiddenPrompts = append(hiddenPrompts, p)
					}
				}
				for _, u := range allURIs {
					if !slices.Contains(uris, u) {
						hiddenURIs = append(hiddenURIs, u)
					}
				}
				if ck.caller != nil && strings.Contains(ck.name, "override") {
					require.Contains(t, hiddenPrompts, "up.secret", ck.name)
					require.Contains(t, hiddenURIs, "file:///secret/b.txt", ck.name)
				}
				metas := []string{`{}`, `{"a":1}`, `{"deep":{"a":{"b":{"c":{"d":1}}}}}`, randomJSON(r, 0), randomJSON(r, 0)}
				for mi, meta := range metas {
					if !strings.HasPrefix(meta, "{") {
						meta = "{}"
					}
					type probe struct {
						method string
						params func(name string) string
					}
					promptProbes := []probe{
						{"prompts/get", func(n string) string { return fmt.Sprintf(`{"name":%q,"arguments":{"topic":"t"},"_meta":%s}`, n, meta) }},
						{"completion/complete", func(n string) string {
							return fmt.Sprintf(`{"ref":{"type":"ref/prompt","name":%q},"argument":{"name":"topic","value":"t"},"_meta":%s}`, n, meta)
						}},
					}
					uriProbes := []probe{
						{"resources/read", func(u string) string { return fmt.Sprintf(`{"uri":%q,"_meta":%s}`, u, meta) }},
					}
					if proto != proto20260728 {
						uriProbes = append(uriProbes,
							probe{"resources/subscribe", func(u string) string { return fmt.Sprintf(`{"uri":%q,"_meta":%s}`, u, meta) }},
							probe{"resources/unsubscribe", func(u string) string { return fmt.Sprintf(`{"uri":%q,"_meta":%s}`, u, meta) }})
					}
					check := func(p probe, hidden []string, absent string) {
						abs := string(normaliseID(c.request(p.method, p.params(absent))))
						if p.method == "resources/read" || p.method == "resources/subscribe" {
							require.Contains(t, abs, `"error":{"code":-32602,"message":"Resource not found"`, "the SDK's answer for a URI nothing serves (MCP's -32602)")
						}
						if mi < 3 {
							key := proto + p.method + absent + meta
							if want, ok := absentAnswers[key]; ok {
								require.Equal(t, want, abs, "%s (%s, cache=%t): %s of what does not exist answers alike whoever asks", ck.name, proto, cache, p.method)
							} else {
								absentAnswers[key] = abs
							}
						}
						for _, h := range hidden {
							hid := normaliseID(c.request(p.method, p.params(h)))
							esc, _ := json.Marshal(h)
							escAbs, _ := json.Marshal(absent)
							hid = bytes.ReplaceAll(hid, esc[1:len(esc)-1], escAbs[1:len(escAbs)-1])
							hid = bytes.ReplaceAll(hid, []byte(strings.ReplaceAll(string(esc[1:len(esc)-1]), `"`, `\"`)), []byte(strings.ReplaceAll(string(escAbs[1:len(escAbs)-1]), `"`, `\"`)))
							require.Equal(t, abs, string(hid), "%s (%s, cache=%t): %s of hidden %s differs from absent; meta=%.200s", ck.name, proto, cache, p.method, h, meta)
						}
					}
					for _, p := range promptProbes {
						check(p, hiddenPrompts, "up.noSuchPrompt")
					}
					for _, p := range uriProbes {
						check(p, hiddenURIs, "file:///no/such/thing")
					}
					// A template hidden ≡ a template that does not exist.
					if !slices.Contains(uris, "file:///notes/today") {
						check(probe{"completion/complete", func(u string) string {
							return fmt.Sprintf(`{"ref":{"type":"ref/resource","uri":%q},"argument":{"name":"name","value":"t"},"_meta":%s}`, u, meta)
						}}, []string{"file:///notes/{name}"}, "file:///none/{name}")
					}
				}
			}
		}
	}
}

// countingCatalog counts what reaches the catalog (the upstreams).
type countingCatalog struct {
	testCatalog
	calls atomic.Int64
}

func (c *countingCatalog) GetPrompt(ctx context.Context, p *registry.Prompt, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	c.calls.Add(1)
	return c.testCatalog.GetPrompt(ctx, p, params)
}
func (c *countingCatalog) Resources(ctx context.Context) []mcpadapter.CatalogResource {
	c.calls.Add(1)
	return c.testCatalog.Resources(ctx)
}
func (c *countingCatalog) Templates(ctx context.Context) []mcpadapter.CatalogTemplate {
	c.calls.Add(1)
	return c.testCatalog.Templates(ctx)
}
func (c *countingCatalog) ReadResource(ctx context.Context, up string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	c.calls.Add(1)
	return c.testCatalog.ReadResource(ctx, up, p)
}
func (c *countingCatalog) Subscribe(ctx context.Context, up, uri string) error {
	c.calls.Add(1)
	return nil
}
func (c *countingCatalog) Unsubscribe(ctx context.Context, up, uri string) error {
	c.calls.Add(1)
	return nil
}
func (c *countingCatalog) Complete(ctx context.Context, up string, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	c.calls.Add(1)
	return c.testCatalog.Complete(ctx, up, p)
}

// TestCatalogCostsNobodyNothing: an anonymous caller (nobody) gets no
// prompt or resource, even under a policy that grants every one to
// everyone, and none of its catalog requests reaches an upstream — not a
// listing, a read, a subscription or a completion (the anonymous cost cap:
// nobody's requests cost no upstream work). A signed-in caller under the
// same policy does reach it (the counter can move).
func TestCatalogCostsNobodyNothing(t *testing.T) {
	t.Parallel()
	const grantAll = "package toolgate.grant\n\nprompts := {p.name | some p in input.prompts}\n\nresource := true\n"
	hook := engine.WithRegistryHook(func(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
		out := *reg
		out.Prompts = testPrompts
		return &out, nil
	})
	requests := []struct{ method, params string }{
		{"prompts/list", `{}`},
		{"prompts/get", `{"name":"up.public"}`},
		{"resources/list", `{}`},
		{"resources/templates/list", `{}`},
		{"resources/read", `{"uri":"file:///public/a.txt"}`},
		{"resources/read", `{"uri":"file:///notes/today"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"up.secret"},"argument":{"name":"topic","value":"t"}}`},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"file:///notes/{name}"},"argument":{"name":"name","value":"t"}}`},
	}
	for _, ck := range []struct {
		name   string
		caller *toolcall.Caller
	}{{"nobody", nil}, {"signed in", &toolcall.Caller{Subject: "max"}}} {
		cat := &countingCatalog{}
		g := newGoverned(t, setup{caller: ck.caller, catalog: cat, policies: map[string]string{"catalog.rego": grantAll}, opts: []engine.Option{hook}})
		for _, proto := range []string{proto20250618, proto20260728} {
			c := g.connectRaw(t, proto)
			reqs := requests
			if proto != proto20260728 {
				reqs = append(reqs, struct{ method, params string }{"resources/subscribe", `{"uri":"file:///public/a.txt"}`},
					struct{ method, params string }{"resources/unsubscribe", `{"uri":"file:///public/a.txt"}`})
			}
			for range 20 {
				for _, r := range reqs {
					resp := string(c.request(r.method, r.params))
					if ck.caller == nil {
						for _, leak := range []string{"for everyone", "prompt public", "content of", `"name":"a.txt"`, `"values":["x"]`} {
							require.NotContains(t, resp, leak, "%s %s", r.method, resp)
						}
					}
				}
			}
		}
		if ck.caller == nil {
			require.Zero(t, cat.calls.Load(), "nobody's catalog requests reached the upstreams")
		} else {
			require.Positive(t, cat.calls.Load(), "a signed-in caller's reach them")
		}
	}
}

// TestCatalogServedWhenGranted is the other half: what a caller's
// listings show it can get, read, subscribe to and complete.
func TestCatalogServedWhenGranted(t *testing.T) {
	t.Parallel()
	g := newCatalogGoverned(t, &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, true)
	cs := g.connectSDK(t, proto20250618, nil)
	ctx := context.Background()
	pl, err := cs.ListPrompts(ctx, nil)
	require.NoError(t, err)
	require.Len(t, pl.Prompts, 3)
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up.secret", Arguments: map[string]string{"topic": "t"}})
	require.NoError(t, err)
	require.Equal(t, "prompt secret", got.Messages[0].Content.(*mcp.TextContent).Text, "the upstream's own name is sent")
	rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes/today"})
	require.NoError(t, err)
	require.Equal(t, "content of file:///notes/today", rd.Contents[0].Text)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///rewards/c.txt"}))
	_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "file:///notes/{name}"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "t"}})
	require.NoError(t, err)
}

// FuzzCatalogHiddenIsAbsent: for any _meta and prompt arguments a client
// sends, prompts/get, resources/read, resources/subscribe and
// completion/complete of what a contractor may not see answer byte for
// byte as what does not exist (docs/contract.md §16).
func FuzzCatalogHiddenIsAbsent(f *testing.F) {
	f.Add(`{}`, `{"topic":"t"}`)
	f.Add(`{"a":{"b":{"c":{"d":{"e":1}}}}}`, `[1]`)
	f.Add(`{"n":1e400}`, `{"topic":123456789012345678901234567890}`)
	f.Add(`null`, `"x"`)
	g := newCatalogGoverned(f, &toolcall.Caller{Subject: "cora", Roles: []string{"contractor"}}, true)
	var clients []*rawClient
	for _, proto := range []string{proto20250618, proto20260728} {
		clients = append(clients, g.connectRaw(f, proto))
	}
	f.Fuzz(func(t *testing.T, meta, args string) {
		if !json.Valid([]byte(meta)) || !json.Valid([]byte(args)) {
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(meta), "{") {
			meta = "{}"
		}
		for _, c := range clients {
			c.t = t
			probes := []struct{ method, hidden, absent, params string }{
				{"prompts/get", "up.secret", "up.secreX", `{"name":@@NAME@@,"arguments":` + args + `,"_meta":` + meta + `}`},
				{"completion/complete", "up.secret", "up.secreX", `{"ref":{"type":"ref/prompt","name":@@NAME@@},"argument":{"name":"topic","value":"t"},"_meta":` + meta + `}`},
				{"resources/read", "file:///secret/b.txt", "file:///secreX/b.txt", `{"uri":@@NAME@@,"_meta":` + meta + `}`},
				{"completion/complete", "file:///notes/{name}", "file:///noteX/{name}", `{"ref":{"type":"ref/resource","uri":@@NAME@@},"argument":{"name":"name","value":"t"},"_meta":` + meta + `}`},
			}
			if c.proto != proto20260728 {
				probes = append(probes, struct{ method, hidden, absent, params string }{"resources/subscribe", "file:///secret/b.txt", "file:///secreX/b.txt", `{"uri":@@NAME@@,"_meta":` + meta + `}`})
			}
			for _, p := range probes {
				with := func(name string) string {
					q, _ := json.Marshal(name)
					return strings.Replace(p.params, "@@NAME@@", string(q), 1)
				}
				hid := normaliseID(c.request(p.method, with(p.hidden)))
				abs := normaliseID(c.request(p.method, with(p.absent)))
				hidStr := strings.ReplaceAll(string(hid), p.hidden, p.absent)
				hidStr = strings.ReplaceAll(hidStr, strings.ReplaceAll(p.hidden, `"`, `\"`), p.absent)
				require.Equal(t, string(abs), hidStr, "%s (%s) meta=%.200s args=%.200s", p.method, c.proto, meta, args)
			}
		}
	})
}

// watchCatalog is testCatalog whose events the test sends.
type watchCatalog struct {
	testCatalog
	mu sync.Mutex
	fs []func(mcpadapter.CatalogEvent)
}

func (w *watchCatalog) Watch(f func(mcpadapter.CatalogEvent)) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fs = append(w.fs, f)
	return func() {}
}

func (w *watchCatalog) send(ev mcpadapter.CatalogEvent) {
	w.mu.Lock()
	fs := slices.Clone(w.fs)
	w.mu.Unlock()
	for _, f := range fs {
		f(ev)
	}
}

// TestCatalogNotifications (docs/contract.md §16): an upstream's
// resources list_changed reaches the sessions; its resources/updated
// reaches a session subscribed through toolgate while its caller may read
// the resource, and never one that is not subscribed.
func TestCatalogNotifications(t *testing.T) {
	t.Parallel()
	cat := &watchCatalog{}
	hook := engine.WithRegistryHook(func(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
		out := *reg
		out.Prompts = testPrompts
		return &out, nil
	})
	g := newGoverned(t, setup{caller: &toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, catalog: cat,
		policies: map[string]string{"catalog.rego": catalogGrant}, opts: []engine.Option{hook}})
	listChanged := make(chan struct{}, 4)
	updated := make(chan string, 4)
	other := make(chan string, 4)
	sub := g.connectSDK(t, proto20250618, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { listChanged <- struct{}{} },
		ResourceUpdatedHandler:     func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	oth := g.connectSDK(t, proto20250618, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { other <- r.Params.URI },
	})
	ctx := context.Background()
	require.NoError(t, sub.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///rewards/c.txt"}))
	cat.send(mcpadapter.CatalogEvent{Kind: mcpadapter.ResourcesChanged, Upstream: "up"})
	select {
	case <-listChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/list_changed")
	}
	cat.send(mcpadapter.CatalogEvent{Kind: mcpadapter.ResourceUpdated, Upstream: "up", URI: "file:///rewards/c.txt"})
	select {
	case uri := <-updated:
		require.Equal(t, "file:///rewards/c.txt", uri)
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated for the subscriber")
	}
	// A ping round trip of the other session after the update: had it
	// been sent the update, it would have arrived before the answer.
	require.NoError(t, oth.Ping(ctx, nil))
	require.Empty(t, other, "a session that did not subscribe gets no update")
}
