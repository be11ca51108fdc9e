package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
)

// withPrompts adds imported prompts (docs/contract.md §16) to the registry.
func withPrompts(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
	out := *reg
	out.Prompts = []registry.Prompt{
		{Name: "up.open", Upstream: "up", Prompt: "open"},
		{Name: "up.rewards", Upstream: "up", Prompt: "rewards", Section: "rewards", Description: "d",
			Arguments: []registry.PromptArgument{{Name: "who", Description: "w", Required: true}}},
		{Name: "up.closed", Upstream: "up", Prompt: "closed", Section: "upstream:up"},
	}
	return &out, nil
}

func visiblePrompts(d *engine.GrantDecision) []string {
	out := []string{}
	for _, i := range d.VisiblePrompts() {
		out = append(out, d.Revision.Registry().Prompts[i].Name)
	}
	return out
}

// TestPromptsFollowTheBaseDecision: without data.toolgate.grant.prompts a
// prompt is granted by its section, as a row is (docs/contract.md §2, §16).
func TestPromptsFollowTheBaseDecision(t *testing.T) {
	cacheModes(t, func(t *testing.T, opts ...engine.Option) {
		rev := newEngine(t, nil, append(opts, engine.WithRegistryHook(withPrompts))...).Current()
		ctx := context.Background()
		require.Equal(t, []string{"up.open", "up.rewards"}, visiblePrompts(rev.Grant(ctx, alice, listReq)))
		require.Equal(t, []string{"up.open"}, visiblePrompts(rev.Grant(ctx, bob, listReq)))
		d := rev.Grant(ctx, bob, engine.Request{Method: engine.MethodPromptsGet, Prompt: "up.rewards"})
		ok, err := d.PromptAllowed("up.rewards")
		require.NoError(t, err)
		require.False(t, ok)
		ok, _ = d.PromptAllowed("up.nothing")
		require.False(t, ok)
		require.False(t, d.PromptsOverride())
		require.Empty(t, visiblePrompts(rev.Grant(ctx, nil, listReq)), "nobody: none")
	})
}

// TestPromptsOverride: data.toolgate.grant.prompts, when defined, is
// exactly the set of prompts the caller may see and get — in the same one
// decision as granted.
func TestPromptsOverride(t *testing.T) {
	pol := map[string]string{"p.rego": `package toolgate.grant

prompts := {"up.closed", "up.nothing"} if "contractor" in input.caller.roles

granted := {"echo"} if "contractor" in input.caller.roles
`}
	cacheModes(t, func(t *testing.T, opts ...engine.Option) {
		rev := newEngine(t, pol, append(opts, engine.WithRegistryHook(withPrompts))...).Current()
		ctx := context.Background()
		d := rev.Grant(ctx, dave, listReq)
		require.Equal(t, []string{"up.closed"}, visiblePrompts(d), "a name no prompt has is never granted")
		require.Equal(t, []string{"echo"}, d.Granted(), "one decision: tools and prompts")
		require.True(t, d.PromptsOverride())
		require.Equal(t, []string{"up.open", "up.rewards"}, visiblePrompts(rev.Grant(ctx, alice, listReq)), "undefined for alice: the base decision")
	})
}

// TestPromptsFailureFailsTheDecision: a prompts value that is not a set
// of strings fails the whole decision, read strictly; leniently the base
// decision is listed.
func TestPromptsFailureFailsTheDecision(t *testing.T) {
	t.Parallel()
	for _, src := range []string{`prompts := "up.open"`, `prompts := {1}`} {
		rev := newEngine(t, map[string]string{"p.rego": "package toolgate.grant\n\n" + src + "\n"}, engine.WithRegistryHook(withPrompts)).Current()
		d := rev.Grant(context.Background(), alice, engine.Request{Method: engine.MethodPromptsGet, Prompt: "up.open"})
		require.Equal(t, engine.Failed, d.Outcome, src)
		_, err := d.PromptAllowed("up.open")
		var pe *engine.PolicyError
		require.True(t, errors.As(err, &pe), src)
		require.Equal(t, engine.KindType, pe.Kind)
		_, err = d.Allowed("echo")
		require.Error(t, err, "the tools read the same failed decision")
		require.Equal(t, []string{"up.open", "up.rewards"}, visiblePrompts(d), "lenient: the base decision")
	}
}

// TestPromptsDecisionMode: a policy without prompts keeps its mode; one
// whose prompts read the request is evaluated per call.
func TestPromptsDecisionMode(t *testing.T) {
	t.Parallel()
	cacheable, _ := newEngine(t, nil, engine.WithRegistryHook(withPrompts)).Current().DecisionMode()
	require.True(t, cacheable)
	rev := newEngine(t, map[string]string{"p.rego": `package toolgate.grant

prompts := {input.request.prompt}
`}, engine.WithRegistryHook(withPrompts)).Current()
	cacheable, why := rev.DecisionMode()
	require.False(t, cacheable)
	require.Contains(t, why, "data.toolgate.grant.prompts")
	d := rev.Grant(context.Background(), bob, engine.Request{Method: engine.MethodPromptsGet, Prompt: "up.closed"})
	ok, err := d.PromptAllowed("up.closed")
	require.NoError(t, err)
	require.True(t, ok, "the policy saw request.prompt")
}

// TestGrantResource: the section of the resource's upstream, overridden
// by data.toolgate.grant.resource when defined; anything but a boolean
// fails, and the lenient reading then falls back to the base decision.
func TestGrantResource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res := func(uri, section, template string) *engine.Resource {
		return &engine.Resource{URI: uri, Name: "n", Upstream: "up", Section: section, Template: template}
	}
	read := engine.Request{Method: engine.MethodResourcesRead}

	rev := newEngine(t, nil).Current()
	require.False(t, rev.ResourcesDecided())
	d := rev.GrantResource(ctx, alice, read, res("file:///a", "rewards", ""))
	require.Equal(t, engine.NoOverride, d.Outcome)
	require.True(t, d.Allowed)
	require.False(t, rev.GrantResource(ctx, bob, read, res("file:///a", "rewards", "")).Allowed)
	require.Equal(t, engine.Nobody, rev.GrantResource(ctx, nil, read, res("file:///a", "", "")).Outcome)

	rev = newEngine(t, map[string]string{"r.rego": `package toolgate.grant

resource := false if {
	"contractor" in input.caller.roles
	startswith(input.resource.uri, "file:///secret/")
}

resource := true if input.resource.template == "file:///open/{x}"

resource := "yes" if input.resource.uri == "file:///bad"
`}).Current()
	require.True(t, rev.ResourcesDecided())
	d = rev.GrantResource(ctx, dave, read, res("file:///secret/x", "", ""))
	require.Equal(t, engine.Override, d.Outcome)
	require.False(t, d.Allowed)
	require.True(t, rev.GrantResource(ctx, alice, read, res("file:///secret/x", "", "")).Allowed, "undefined: the base decision")
	require.True(t, rev.GrantResource(ctx, bob, read, res("file:///open/1", "reports", "file:///open/{x}")).Allowed, "the template matched")
	d = rev.GrantResource(ctx, alice, read, res("file:///bad", "rewards", ""))
	require.Equal(t, engine.Failed, d.Outcome)
	require.False(t, d.Allowed)
	require.True(t, d.Visible(), "lenient: the base decision")
}

// TestCatalogInputDocumentMatchesSchema: the input documents of the
// prompts and resources methods validate against schema/input.schema.json.
func TestCatalogInputDocumentMatchesSchema(t *testing.T) {
	t.Parallel()
	validate := inputSchema(t)
	rev := newEngine(t, nil, engine.WithRegistryHook(withPrompts)).Current()
	for _, req := range []engine.Request{
		{Method: engine.MethodPromptsList},
		{Method: engine.MethodPromptsGet, Prompt: "up.rewards", Arguments: json.RawMessage(`{"who":"x"}`)},
		{Method: engine.MethodPromptsGet, Prompt: "nothing"},
		{Method: engine.MethodResourcesList},
		{Method: engine.MethodResourcesRead, URI: "file:///a"},
		{Method: engine.MethodComplete, Prompt: "up.rewards"},
	} {
		doc, err := rev.InputDocument(alice, req, false)
		require.NoError(t, err)
		validate(t, doc)
	}
	doc, err := rev.ResourceInputDocument(alice, engine.Request{Method: engine.MethodResourcesRead, URI: "file:///n/1"},
		&engine.Resource{URI: "file:///n/1", Name: "n", Upstream: "up", Template: "file:///n/{x}"})
	require.NoError(t, err)
	validate(t, doc)
	require.Contains(t, string(doc), `"template":"file:///n/{x}"`)
	require.Contains(t, string(doc), `"mimeType":null`)
}
