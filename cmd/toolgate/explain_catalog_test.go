package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// everythingServerBin builds the go-sdk's conformance server (prompts,
// resources, templates, completions) from the module cache.
func everythingServerBin(t *testing.T) string {
	t.Helper()
	return proctest.Build(t, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
}

// TestExplainCatalog (docs/contract.md §16): toolgate explain --prompt and
// --resource (or --uri) with the importing upstream given by --upstream
// say what prompts/get and resources/read would get, read from the same
// decisions the server takes.
func TestExplainCatalog(t *testing.T) {
	t.Parallel()
	bin := everythingServerBin(t)
	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("sections:\n  \"upstream:ev\": { roles: [admin, contractor] }\ntools: []\n"), 0o600))
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(pol, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant.rego"), []byte(`package toolgate.grant

prompts := {p.name | some p in input.prompts; p.base; p.name != "ev.test_prompt_with_image"} if {
	"contractor" in input.caller.roles
}

resource := false if {
	"contractor" in input.caller.roles
	input.resource.template != null
}
`), 0o600))
	explain := func(args ...string) map[string]any {
		t.Helper()
		var stdout, stderr bytes.Buffer
		all := append([]string{"explain", "--registry", reg, "--policy", pol, "--upstream", "ev=" + bin, "--format", "json"}, args...)
		code := run(context.Background(), &env{args: all, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr})
		require.Equal(t, 0, code, stderr.String())
		var x map[string]any
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &x), stdout.String())
		return x
	}
	x := explain("--as", "carl", "--role", "contractor", "--prompt", "ev.test_prompt_with_image", "--resource", "test://template/1/data")
	p, r := x["prompt"].(map[string]any), x["resource"].(map[string]any)
	assert.Equal(t, false, p["granted"])
	assert.Equal(t, true, p["exists"])
	assert.Equal(t, "data.toolgate.grant.prompts", p["decided_by"])
	assert.Equal(t, `unknown prompt "ev.test_prompt_with_image"`, p["answer"])
	assert.Equal(t, "test://template/{id}/data", r["template"])
	assert.Equal(t, false, r["allowed"])
	assert.Equal(t, "Resource not found", r["answer"])

	x = explain("--as", "ann", "--role", "admin", "--prompt", "ev.test_prompt_with_image", "--uri", "test://static-text")
	p, r = x["prompt"].(map[string]any), x["resource"].(map[string]any)
	assert.Equal(t, true, p["granted"])
	assert.Equal(t, "the base decision: section upstream:ev", p["decided_by"])
	assert.Equal(t, true, r["allowed"])
	assert.Nil(t, r["template"])

	x = explain("--as", "ann", "--role", "admin", "--prompt", "ev.nothing", "--uri", "test://nothing")
	p, r = x["prompt"].(map[string]any), x["resource"].(map[string]any)
	assert.Equal(t, false, p["exists"])
	assert.Equal(t, false, r["exists"])
	assert.Equal(t, "Resource not found", r["answer"])
}
