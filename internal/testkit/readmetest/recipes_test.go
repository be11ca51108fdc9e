package readmetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/cli/policytest"
)

// policiesPage is the policy-writing guide whose recipes
// TestPolicyRecipes compiles.
const policiesPage = "docs/policies.md"

// TestPolicyRecipes: each policy of docs/policies.md (and of every other
// guide page) loads as a policy
// directory of its own, with the bundled registry, as `toolgate serve`
// would load it (compiled, type-checked, with the server's capabilities);
// a data document the page names (data.limits) is given as
// rego/limits/data.json. Each of the page's tests (package ..._test)
// passes, with the policy tests' fixture, against the policy right
// before it in the same section, or else against the first recipe (the
// one the testing section says it tests).
func TestPolicyRecipes(t *testing.T) {
	root := checkout(t)
	var policies, tests []block
	var first *block
	// against is the policy each test runs against, by the test's line.
	against := map[int]*block{}
	var prev *block
	for _, b := range pageBlocks(t, root, policiesPage) {
		if b.lang != "rego" || b.directive == "skip" {
			continue
		}
		if strings.Contains(b.body, "_test\n") {
			tests = append(tests, b)
			if prev != nil && prev.section == b.section {
				against[b.line] = prev
			}
			prev = nil
			continue
		}
		prev = &b
		policies = append(policies, b)
		if b.section == "Recipes" && first == nil {
			first = &policies[len(policies)-1]
		}
	}
	require.NotEmpty(t, policies, "%s has no policy", policiesPage)
	require.NotNil(t, first, "%s has no ## Recipes with a policy", policiesPage)
	require.NotEmpty(t, tests, "%s has no test", policiesPage)
	// The policies other pages show load too.
	for _, page := range guidePages(t, root) {
		if page == policiesPage {
			continue
		}
		for _, b := range pageBlocks(t, root, page) {
			if b.lang == "rego" && b.directive != "skip" && !strings.Contains(b.body, "_test\n") {
				policies = append(policies, b)
			}
		}
	}

	dir := func(b block) string {
		d := t.TempDir()
		pol := filepath.Join(d, "rego")
		require.NoError(t, os.MkdirAll(filepath.Join(pol, "limits"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pol, "recipe.rego"), []byte(b.body), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(pol, "limits", "data.json"), []byte(`{"max_amount": 1000}`), 0o644))
		return pol
	}
	for _, b := range policies {
		t.Run(b.where(), func(t *testing.T) {
			_, err := engine.New(t.Context(), engine.Source{Registry: filepath.Join(root, "example", "registry.yaml"), Policies: dir(b)})
			require.NoError(t, err, "%s: the policy does not load", b.where())
		})
	}
	for _, b := range tests {
		t.Run(b.where(), func(t *testing.T) {
			recipe := first
			if p, ok := against[b.line]; ok {
				recipe = p
			}
			pol := dir(*recipe)
			require.NoError(t, os.WriteFile(filepath.Join(pol, "recipe_test.rego"), []byte(b.body), 0o644))
			// data.fixtures.bundled, as in policy-tests/.
			require.NoError(t, os.CopyFS(filepath.Join(pol, "fixtures"), os.DirFS(filepath.Join(root, "policy-tests", "fixtures"))))
			rep, err := policytest.Run(t.Context(), policytest.Options{Paths: []string{pol}})
			require.NoError(t, err)
			var out strings.Builder
			require.NoError(t, rep.WritePretty(&out, true))
			require.NotEmpty(t, rep.Results, "%s: no test ran", b.where())
			require.True(t, rep.Passed(), "%s: against the recipe at %s:\n%s", b.where(), recipe.where(), out.String())
		})
	}
}
