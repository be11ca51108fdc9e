package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/console"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// TestMatrixPromptsAndResources (docs/contract.md §16): the matrix shows
// the imported prompts and the resources below the tools, each cell read
// from the decision the server takes: the base decision of the section,
// or the policy's override.
func TestMatrixPromptsAndResources(t *testing.T) {
	t.Parallel()
	policy := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(policy, "catalog.rego"), []byte(`package toolgate.grant

prompts := set() if "contractor" in input.caller.roles

resource := false if {
	"contractor" in input.caller.roles
	startswith(input.resource.uri, "file:///private/")
}
`), 0o600))
	withPrompts := engine.WithRegistryHook(func(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
		out := *reg
		out.Prompts = []registry.Prompt{{Name: "up.notes", Upstream: "up", Prompt: "notes"}, {Name: "up.reports", Upstream: "up", Prompt: "reports", Section: "reports"}}
		return &out, nil
	})
	eng, err := engine.New(t.Context(), toolgate.Source("", policy), withPrompts, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	resources := []engine.Resource{{URI: "file:///public/a", Upstream: "up"}, {URI: "file:///private/b", Upstream: "up"}}
	c := console.New(console.Options{
		Auth: func(r *http.Request) (*toolcall.Caller, bool) {
			return &toolcall.Caller{Subject: "ops", Roles: []string{"admin"}}, true
		},
		Explainer: console.ExplainerFunc(func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation {
			return inspect.Explain(ctx, inspect.ExplainOptions{Revision: eng.Current(), Caller: c, Tool: tool, Meta: meta})
		}),
		Resources: func(context.Context) []engine.Resource { return resources },
		DecideResource: func(ctx context.Context, c *toolcall.Caller, res *engine.Resource) engine.ResourceDecision {
			return eng.Current().GrantResource(ctx, c, engine.Request{Method: engine.MethodResourcesList}, res)
		},
	})
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest("POST", srv.URL+"/console/api/matrix", strings.NewReader(`{"callers":[{"subject":"ops","roles":["admin"]},{"subject":"carl","roles":["contractor"]}],"limit":500}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var m console.Matrix
	require.NoError(t, json.Unmarshal(body, &m))
	got := map[string][]string{}
	for _, r := range m.Rows {
		if r.Kind != "" {
			got[r.Kind+" "+r.Name] = r.Cells
		}
	}
	assert.Equal(t, map[string][]string{
		"prompt up.notes":            {console.CellVisible, console.CellHiddenOverride},
		"prompt up.reports":          {console.CellVisible, console.CellHiddenOverride},
		"resource file:///public/a":  {console.CellVisible, console.CellVisible},
		"resource file:///private/b": {console.CellVisible, console.CellHiddenOverride},
	}, got)
	assert.Equal(t, len(m.Rows), m.Total)
}
