package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// everythingServer builds the go-sdk's conformance server (prompts,
// resources, templates, subscriptions, completions) from the module
// cache.
func everythingServer(t *testing.T) string {
	t.Helper()
	return proctest.Build(t, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
}

// catalogPolicy hides the image prompt and the binary resource and every
// templated resource from contractors; admins get everything their
// section grants.
const catalogPolicy = `package toolgate.grant

prompts := {p.name | some p in input.prompts; p.base; p.name != "ev.test_prompt_with_image"} if {
	"contractor" in input.caller.roles
}

resource := false if {
	"contractor" in input.caller.roles
	input.resource.uri == "test://static-binary"
}

resource := false if {
	"contractor" in input.caller.roles
	input.resource.template != null
}
`

// catalogGateway serves the conformance server over stdio, imported, its
// section granted to admin and contractor.
func catalogGateway(t *testing.T, callers ...*toolcall.Caller) *running {
	t.Helper()
	return catalogGatewayIn(t, t.TempDir(), callers...)
}

// catalogGatewayIn is catalogGateway with its files (audit.jsonl,
// decisions.jsonl) in dir.
func catalogGatewayIn(t *testing.T, dir string, callers ...*toolcall.Caller) *running {
	t.Helper()
	bin := everythingServer(t)
	reg, pol := writeSource(t, dir, "sections:\n  \"upstream:ev\": { roles: [admin, contractor] }\ntools: []\n", catalogPolicy)
	watch := false
	return startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, callers...),
			Upstreams: []upstream.Settings{{Name: "ev", Command: bin, Import: true}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), DecisionLog: decisionlog.Settings{Target: filepath.Join(dir, "decisions.jsonl")}, Watch: &watch},
		Stderr: io.Discard,
	})
}

func promptNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListPrompts(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, p := range res.Prompts {
		out = append(out, p.Name)
	}
	return out
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListResources(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, r := range res.Resources {
		out = append(out, r.URI)
	}
	return out
}

// rpcError is the error a client got; under 2026-07-28 the SDK's client
// reports a JSON-RPC error inside a transport error.
func rpcError(t *testing.T, err error) error {
	t.Helper()
	require.Error(t, err)
	return err
}

// TestCatalogThroughGateway (docs/contract.md §16): a go-sdk client lists,
// gets and reads an importing stdio upstream's prompts and resources
// through toolgate, under every protocol revision; what the policy hides
// from a contractor is absent from the listings and answers as what does
// not exist.
func TestCatalogThroughGateway(t *testing.T) {
	t.Parallel()
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	contractor := &toolcall.Caller{Subject: "carl", Roles: []string{"contractor"}}
	stranger := &toolcall.Caller{Subject: "sam", Roles: []string{"viewer"}}
	g := catalogGateway(t, admin, contractor, stranger)
	ctx := context.Background()
	allPrompts := []string{"ev.test_simple_prompt", "ev.test_prompt_with_arguments", "ev.test_prompt_with_embedded_resource", "ev.test_prompt_with_image", "ev.test_input_required_result_prompt"}
	allResources := []string{"test://static-text", "test://static-binary", "test://watched-resource"}

	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			as := connect(t, ctx, g.url, proto, admin)
			cs := connect(t, ctx, g.url, proto, contractor)
			ss := connect(t, ctx, g.url, proto, stranger)

			caps := as.InitializeResult().Capabilities
			require.NotNil(t, caps.Prompts, "prompts announced")
			assert.True(t, caps.Prompts.ListChanged)
			require.NotNil(t, caps.Resources, "resources announced")
			assert.True(t, caps.Resources.Subscribe && caps.Resources.ListChanged)
			assert.NotNil(t, caps.Completions, "completions announced")

			assert.ElementsMatch(t, allPrompts, promptNames(t, as))
			var notImage []string
			for _, p := range allPrompts {
				if p != "ev.test_prompt_with_image" {
					notImage = append(notImage, p)
				}
			}
			assert.ElementsMatch(t, notImage, promptNames(t, cs))
			assert.Empty(t, promptNames(t, ss), "closed by default: the section is not the stranger's")

			got, err := as.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev.test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
			require.NoError(t, err)
			assert.Equal(t, "Prompt with arguments: arg1='a', arg2='b'", got.Messages[0].Content.(*mcp.TextContent).Text)

			// Hidden ≡ absent for prompts/get.
			_, hidden := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev.test_prompt_with_image"})
			_, absent := as.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev.test_prompt_with_imagX"})
			assert.Equal(t, strings.ReplaceAll(rpcError(t, absent).Error(), "imagX", "image"), rpcError(t, hidden).Error())

			assert.ElementsMatch(t, allResources, resourceURIs(t, as))
			assert.ElementsMatch(t, []string{"test://static-text", "test://watched-resource"}, resourceURIs(t, cs))
			assert.Empty(t, resourceURIs(t, ss))

			read, err := as.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
			require.NoError(t, err)
			assert.Equal(t, "This is the content of the static text resource.", read.Contents[0].Text)
			read, err = as.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/7/data"})
			require.NoError(t, err, "a URI matching a template")
			assert.Contains(t, read.Contents[0].Text, `"id": "7"`)

			tmpl, err := as.ListResourceTemplates(ctx, nil)
			require.NoError(t, err)
			require.Len(t, tmpl.ResourceTemplates, 1)
			tmpl, err = cs.ListResourceTemplates(ctx, nil)
			require.NoError(t, err)
			assert.Empty(t, tmpl.ResourceTemplates)

			// Hidden ≡ absent for resources/read and resources/subscribe.
			for _, uri := range []string{"test://static-binary", "test://template/7/data"} {
				_, hidden := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				_, absent := as.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri + "x"})
				assert.Equal(t, strings.ReplaceAll(rpcError(t, absent).Error(), uri+"x", uri), rpcError(t, hidden).Error(), uri)
				if proto < "2026-07-28" { // later: subscriptions/listen acknowledges what it keeps
					hidden = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
					absent = as.Subscribe(ctx, &mcp.SubscribeParams{URI: uri + "x"})
					assert.Equal(t, strings.ReplaceAll(rpcError(t, absent).Error(), uri+"x", uri), rpcError(t, hidden).Error(), uri)
				}
			}

			// Completions for a prompt the caller may get; hidden ≡ absent.
			comp, err := as.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ev.test_prompt_with_arguments"},
				Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "x"}})
			require.NoError(t, err)
			assert.NotNil(t, comp.Completion.Values)
			_, err = ss.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ev.test_prompt_with_arguments"},
				Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "x"}})
			_, absent = as.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ev.test_prompt_with_argumentX"},
				Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "x"}})
			assert.Equal(t, strings.ReplaceAll(rpcError(t, absent).Error(), "argumentX", "arguments"), rpcError(t, err).Error())
			_, err = as.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"},
				Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"}})
			require.NoError(t, err, "a template the caller may see")
		})
	}
}

// TestCatalogCacheScopePrivate: every policy-decided listing is private to
// the caller on the revision that carries cache hints.
func TestCatalogCacheScopePrivate(t *testing.T) {
	t.Parallel()
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := catalogGateway(t, admin)
	ctx := context.Background()
	cs := connect(t, ctx, g.url, "2026-07-28", admin)
	p, err := cs.ListPrompts(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "private", p.CacheScope)
	r, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "private", r.CacheScope)
	tm, err := cs.ListResourceTemplates(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "private", tm.CacheScope)
}

// TestCatalogResourceUpdated: a subscription through toolgate receives the
// upstream's notifications/resources/updated (the conformance server
// updates its watched resource every few seconds).
func TestCatalogResourceUpdated(t *testing.T) {
	t.Parallel()
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := catalogGateway(t, admin)
	ctx := context.Background()
	updated := make(chan string, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "sub-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
	})
	cs := connectWith(t, ctx, client, g.url, "2025-11-25", admin)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}))
	select {
	case uri := <-updated:
		assert.Equal(t, "test://watched-resource", uri)
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/resources/updated within 30s (the server sends one every 3s)")
	}
}

// connectWith is connect with the given client and the standalone SSE
// stream open (notifications outside a request arrive on it).
func connectWith(t *testing.T, ctx context.Context, client *mcp.Client, url, proto string, caller *toolcall.Caller) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: tokenFor(caller), Next: tr}}},
		&mcp.ClientSessionOptions{ProtocolVersion: proto})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(); tr.CloseIdleConnections() })
	return cs
}

// TestCatalogDecisionsOnRecord: a prompts/get and a resources/read are
// decisions too (docs/contract.md §16): the decision log has an event for
// each, hidden and absent alike; the audit trail a line for each relayed
// one, none for a hidden one.
func TestCatalogDecisionsOnRecord(t *testing.T) {
	t.Parallel()
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	contractor := &toolcall.Caller{Subject: "carl", Roles: []string{"contractor"}}
	dir := t.TempDir()
	g := catalogGatewayIn(t, dir, admin, contractor)
	ctx := context.Background()
	as := connect(t, ctx, g.url, protocols[0], admin)
	cs := connect(t, ctx, g.url, protocols[0], contractor)
	_, err := as.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev.test_simple_prompt"})
	require.NoError(t, err)
	_, err = as.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
	require.NoError(t, err)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
	require.Error(t, err, "hidden from the contractor")
	require.NoError(t, g.stop())

	audit, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	require.NoError(t, err)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(audit)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		if m["stage"] == "catalog" {
			lines = append(lines, m)
		}
	}
	require.Len(t, lines, 2, "%s", audit)
	assert.Equal(t, []any{"prompts/get", "ev.test_simple_prompt", "ann", "result"}, []any{lines[0]["method"], lines[0]["tool"], lines[0]["subject"], lines[0]["outcome"]})
	assert.Equal(t, []any{"resources/read", "test://static-text", "ann", "result"}, []any{lines[1]["method"], lines[1]["tool"], lines[1]["subject"], lines[1]["outcome"]})

	dl, err := os.ReadFile(filepath.Join(dir, "decisions.jsonl"))
	require.NoError(t, err)
	var events []string
	for _, l := range strings.Split(strings.TrimSpace(string(dl)), "\n") {
		var e struct {
			Input struct {
				Caller  map[string]any `json:"caller"`
				Request map[string]any `json:"request"`
			} `json:"input"`
			Result map[string]any `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &e), l)
		if m, _ := e.Input.Request["method"].(string); m == "prompts/get" || m == "resources/read" {
			events = append(events, fmt.Sprintf("%s %s %v %v", e.Input.Caller["subject"], m, e.Input.Request["tool"], e.Result["allowed"]))
		}
	}
	assert.Equal(t, []string{"ann prompts/get ev.test_simple_prompt true", "ann resources/read test://static-text true", "carl resources/read test://static-binary false"}, events)
}

// TestCatalogPromptsListChanged: an upstream's
// notifications/prompts/list_changed rebuilds the revision with its new
// prompts, and the sessions are told (docs/contract.md §16).
func TestCatalogPromptsListChanged(t *testing.T) {
	t.Parallel()
	admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
	g := catalogGateway(t, admin)
	ctx := context.Background()
	// A listing waits for the upstreams' start; the client below connects
	// after it, so the list_changed it gets is the upstream's own.
	require.NotEmpty(t, promptNames(t, connect(t, ctx, g.url, "2025-11-25", admin)))
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "prompts-test", Version: "1"}, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs := connectWith(t, ctx, client, g.url, "2025-11-25", admin)
	require.NotContains(t, promptNames(t, cs), "ev.__transient_prompt_for_list_changed")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev.test_trigger_prompt_change", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	// The upstream's own notification may be relayed before the revision
	// with its new prompt is built, which notifies again: list after each.
	for {
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/prompts/list_changed within 30s")
		}
		if slices.Contains(promptNames(t, cs), "ev.__transient_prompt_for_list_changed") {
			break
		}
	}
}
