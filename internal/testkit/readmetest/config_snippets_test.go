package readmetest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/registry"
)

// checkConfigBlock checks one ```yaml or ```rego block: a yaml block is a
// settings file `toolgate serve --config` accepts (no unknown key, every
// value of its kind), or, after <!-- readme:registry -->, a registry the
// registry loader accepts; a rego block parses as Rego v1. checked says
// whether the block is one it checks; scratch is a directory for files.
func checkConfigBlock(b block, scratch string) (checked bool, err error) {
	if b.directive == "skip" {
		return false, nil
	}
	switch {
	case b.lang == "yaml" && b.directive == "registry":
		if _, err := registry.Parse([]byte(b.body), "yaml"); err != nil {
			return true, fmt.Errorf("%s: the registry: %w", b.where(), err)
		}
	case b.lang == "yaml":
		path := filepath.Join(scratch, "toolgate.yaml")
		if err := os.WriteFile(path, []byte(b.body), 0o644); err != nil {
			return true, err
		}
		if _, err := config.LoadServe([]string{"--config", path}, io.Discard); err != nil {
			return true, fmt.Errorf("%s: the settings file: %w\n(a ```yaml block that is not a toolgate settings file says what it is in a comment right before its fence: <!-- readme:registry --> for a registry, <!-- readme:skip --> for anything else)", b.where(), err)
		}
	case b.lang == "rego":
		if _, err := ast.ParseModuleWithOpts(b.where(), b.body, ast.ParserOptions{RegoVersion: ast.RegoV1}); err != nil {
			return true, err
		}
	default:
		return false, nil
	}
	return true, nil
}

// envRef matches a ${NAME} reference to toolgate's environment in a block.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// TestReadmeConfigAndRegoSnippets: every ```yaml block of the README and of
// the pages under docs/ is a settings file `toolgate serve --config`
// accepts, or a registry where it says <!-- readme:registry --> before it,
// and every ```rego block parses as Rego v1. A block that is something
// else says so with <!-- readme:skip --> before it.
func TestReadmeConfigAndRegoSnippets(t *testing.T) {
	root := checkout(t)
	n, registries := 0, 0
	for _, b := range guideBlocks(t, root) {
		// A settings file may take secrets from the environment (${NAME});
		// the block is checked with each such variable set to a stand-in.
		for _, m := range envRef.FindAllStringSubmatch(b.body, -1) {
			t.Setenv(m[1], strings.Repeat("x", 64))
		}
		checked, err := checkConfigBlock(b, t.TempDir())
		require.NoError(t, err)
		if checked {
			n++
			if b.directive == "registry" {
				registries++
			}
		}
	}
	require.NotZero(t, n, "no yaml or rego block found")
	require.NotZero(t, registries, "no registry block found")
}

// TestConfigBlockFails: a settings file with an unknown key, a registry
// with a problem, a registry not marked as one, and Rego that does not
// parse each fail; a marked registry passes.
func TestConfigBlockFails(t *testing.T) {
	for name, md := range map[string]string{
		"unknown settings key":        "```yaml\nno-such-key: 1\n```\n",
		"registry problem":            "<!-- readme:registry -->\n\n```yaml\ntools:\n  - {name: x, method: m, arguments: [{name: a, type: nosuchtype}]}\n```\n",
		"a registry read as settings": "```yaml\ntools: []\n```\n",
		"rego":                        "```rego\npackage p\n\nx := if\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			blocks, err := parseBlocks(md)
			require.NoError(t, err)
			require.Len(t, blocks, 1)
			checked, err := checkConfigBlock(blocks[0], t.TempDir())
			require.True(t, checked)
			require.Error(t, err)
		})
	}
	blocks, err := parseBlocks("<!-- readme:registry -->\n\n```yaml\ntools:\n  - {name: x, method: m, arguments: [{name: a, type: int}]}\n```\n")
	require.NoError(t, err)
	checked, err := checkConfigBlock(blocks[0], t.TempDir())
	require.True(t, checked)
	require.NoError(t, err)
}
