package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"
)

// TestSplitRowsRefused: a rewrite of the rows the compiler refuses is
// dropped, and the policy is split as it would be without it.
func TestSplitRowsRefused(t *testing.T) {
	t.Parallel()
	const src = `package toolgate.grant

visible := {t.name | some t in input.tools; t.base}

granted := {t.name | some t in input.tools; t.base; not input.request.meta.hide == t.name} | visible
`
	m, err := ast.ParseModule("grant.rego", src)
	require.NoError(t, err)
	modules := map[string]*ast.Module{"grant.rego": m}
	for _, refuse := range []bool{false, true} {
		c := ast.NewCompiler()
		c.Compile(modules)
		require.False(t, c.Failed(), c.Errors)
		calls := 0
		newCompiler := func() *ast.Compiler {
			calls++
			if refuse && calls == 2 { // the compile of the rows' rewrite
				return ast.NewCompiler().WithCapabilities(&ast.Capabilities{})
			}
			return ast.NewCompiler()
		}
		sg, why := newSplitGrant(context.Background(), modules, c, newCompiler, nil)
		require.NotNil(t, sg, why)
		require.Equal(t, 2, calls)
		require.Equal(t, !refuse, sg.rows)
		require.Equal(t, !refuse, strings.Contains(sg.why, "the rows of the comprehension at grant.rego:5"), sg.why)
		require.Contains(t, sg.why, "data.toolgate.grant.visible")
		if refuse {
			require.Len(t, sg.refs, 1)
		} else {
			require.Len(t, sg.refs, 2)
		}
	}
}
