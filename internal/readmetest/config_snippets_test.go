package readmetest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/config"
)

// TestReadmeConfigAndRegoSnippets: every ```yaml block of the README is a
// settings file `toolgate serve --config` accepts (no unknown key, every
// value of its kind), and every ```rego block parses as Rego v1. A block
// that is something else says so with <!-- readme:skip --> before it.
func TestReadmeConfigAndRegoSnippets(t *testing.T) {
	root := checkout(t)
	n := 0
	for _, b := range readmeBlocks(t, root) {
		if b.directive == "skip" {
			continue
		}
		switch b.lang {
		case "yaml":
			n++
			path := filepath.Join(t.TempDir(), "toolgate.yaml")
			require.NoError(t, os.WriteFile(path, []byte(b.body), 0o644))
			_, err := config.LoadServe([]string{"--config", path}, io.Discard)
			require.NoError(t, err, "README.md:%d: the settings file", b.line)
		case "rego":
			n++
			_, err := ast.ParseModuleWithOpts(fmt.Sprintf("README.md:%d", b.line), b.body, ast.ParserOptions{RegoVersion: ast.RegoV1})
			require.NoError(t, err, "README.md:%d", b.line)
		}
	}
	require.NotZero(t, n, "no yaml or rego block found")
}
