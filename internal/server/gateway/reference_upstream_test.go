package gateway_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/internal/testkit/oidctest"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

// upstreamsDir holds the pinned reference MCP servers (scripts/upstreams-setup).
var upstreamsDir = filepath.Join("..", "..", "..", "testdata", "upstreams")

// referencePolicy hides the reference server's static documents folder
// from contractors (by URI prefix) and every templated resource; the
// simple prompt is for writers only.
const referencePolicy = `package toolgate.grant

resource := false if {
	"contractor" in input.caller.roles
	startswith(input.resource.uri, "demo://resource/static/document/")
}

resource := false if {
	"contractor" in input.caller.roles
	input.resource.template != null
}

prompts := {p.name | some p in input.prompts; p.base; p.name != "ev.simple-prompt"} | {"ev.simple-prompt" | "writer" in input.caller.roles}
`

// TestReferenceUpstreamCatalog (docs/contract.md §16): the ecosystem's
// reference server @modelcontextprotocol/server-everything (pinned in
// testdata/upstreams) as a stdio upstream with import: true. Through
// toolgate a go-sdk client lists and reads its resources and gets its
// prompts; a policy hides a folder of resources from a contractor (absent
// from the listing, read as a URI nothing serves) and a prompt from
// everyone but writers.
func TestReferenceUpstreamCatalog(t *testing.T) {
	t.Parallel()
	node := oidctest.RequireNode(t, upstreamsDir, "the reference MCP servers are not installed: run scripts/upstreams-setup")
	script, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(t, err)
	writer := &toolcall.Caller{Subject: "wes", Roles: []string{"writer"}}
	contractor := &toolcall.Caller{Subject: "carl", Roles: []string{"contractor"}}
	dir := t.TempDir()
	reg, pol := writeSource(t, dir, "sections:\n  \"upstream:ev\": { roles: [writer, contractor] }\ntools: []\n", referencePolicy)
	watch := false
	g := startGateway(t, gateway.Config{
		Serve: config.Serve{Registry: reg, Policy: pol, Tokens: writeTokens(t, dir, writer, contractor),
			Upstreams: []upstream.Settings{{Name: "ev", Command: node, Args: []string{script, "stdio"}, Import: true}},
			Ledger:    "memory", Audit: filepath.Join(dir, "audit.jsonl"), Watch: &watch},
		Stderr: io.Discard,
	})
	ctx := context.Background()
	ws := connect(t, ctx, g.url, protocols[1], writer)
	cs := connect(t, ctx, g.url, protocols[1], contractor)

	all := resourceURIs(t, ws)
	var docs []string
	for _, u := range all {
		if strings.HasPrefix(u, "demo://resource/static/document/") {
			docs = append(docs, u)
		}
	}
	require.NotEmpty(t, docs, "the reference server lists its documents: %v", all)
	seen := resourceURIs(t, cs)
	for _, u := range docs {
		assert.NotContains(t, seen, u, "the folder is hidden from the contractor")
	}
	assert.Len(t, seen, len(all)-len(docs))

	read, err := ws.ReadResource(ctx, &mcp.ReadResourceParams{URI: docs[0]})
	require.NoError(t, err, "the writer reads a document")
	require.NotEmpty(t, read.Contents)
	_, hidden := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: docs[0]})
	_, absent := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: docs[0] + "-gone"})
	require.Error(t, hidden)
	assert.Equal(t, strings.ReplaceAll(absent.Error(), docs[0]+"-gone", docs[0]), hidden.Error(), "hidden ≡ absent")

	assert.Contains(t, promptNames(t, ws), "ev.simple-prompt")
	assert.NotContains(t, promptNames(t, cs), "ev.simple-prompt")
	got, err := ws.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev.simple-prompt"})
	require.NoError(t, err)
	require.NotEmpty(t, got.Messages)
	_, hidden = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev.simple-prompt"})
	_, absent = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev.simple-prompX"})
	assert.Equal(t, strings.ReplaceAll(absent.Error(), "prompX", "prompt"), hidden.Error())
}
