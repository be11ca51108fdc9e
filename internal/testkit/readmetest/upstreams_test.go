package readmetest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/format"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// TestUpstreamsWorkedPolicy evaluates the worked policy of docs/upstreams.md
// as written there (docs/contract.md §16): contractors see nothing under
// the private folder and no template; only writers get the release-notes
// prompt. The block is `opa fmt` clean.
func TestUpstreamsWorkedPolicy(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(checkout(t), "docs", "upstreams.md"))
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```rego\n(.*?)```").FindAllSubmatch(page, -1)
	require.Len(t, blocks, 1, "docs/upstreams.md has one rego block")
	src := blocks[0][1]
	formatted, err := format.Source("worked.rego", src)
	require.NoError(t, err)
	require.Equal(t, string(formatted), string(src), "the worked policy is opa fmt clean")

	fsys := fstest.MapFS{
		"registry.yaml":        {Data: []byte("sections:\n  share: { roles: [contractor, writer, staff] }\ntools: []\n")},
		"policies/worked.rego": {Data: src},
	}
	prompts := func(_ context.Context, reg *registry.Registry) (*registry.Registry, error) {
		out := *reg
		out.Prompts = []registry.Prompt{
			{Name: "files.release-notes", Upstream: "files", Prompt: "release-notes", Section: "share"},
			{Name: "files.summarize", Upstream: "files", Prompt: "summarize", Section: "share"},
		}
		return &out, nil
	}
	eng, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithRegistryHook(prompts))
	require.NoError(t, err)
	rev := eng.Current()
	ctx := context.Background()
	contractor := &toolcall.Caller{Subject: "carl", Roles: []string{"contractor"}}
	writer := &toolcall.Caller{Subject: "wes", Roles: []string{"writer"}}
	staff := &toolcall.Caller{Subject: "sue", Roles: []string{"staff"}}

	got := func(c *toolcall.Caller) []string {
		var out []string
		d := rev.Grant(ctx, c, engine.Request{Method: engine.MethodPromptsList})
		for _, i := range d.VisiblePrompts() {
			out = append(out, rev.Registry().Prompts[i].Name)
		}
		return out
	}
	require.Equal(t, []string{"files.release-notes", "files.summarize"}, got(writer))
	require.Equal(t, []string{"files.summarize"}, got(contractor))
	require.Equal(t, []string{"files.summarize"}, got(staff))

	read := func(c *toolcall.Caller, uri, template string) bool {
		return rev.GrantResource(ctx, c, engine.Request{Method: engine.MethodResourcesRead, URI: uri},
			&engine.Resource{URI: uri, Upstream: "files", Section: "share", Template: template}).Allowed
	}
	for _, c := range []*toolcall.Caller{contractor, writer, staff} {
		isContractor := slices.Contains(c.Roles, "contractor")
		require.Equal(t, !isContractor, read(c, "file:///srv/share/private/plan.md", ""), c.Subject)
		require.True(t, read(c, "file:///srv/share/public/readme.md", ""), c.Subject)
		require.Equal(t, !isContractor, read(c, "file:///srv/share/notes/1", "file:///srv/share/notes/{id}"), c.Subject)
	}
	require.False(t, read(&toolcall.Caller{Subject: "x", Roles: []string{"guest"}}, "file:///srv/share/public/readme.md", ""), "closed by default")
}
