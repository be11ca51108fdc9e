package engine_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/engine"
)

// TestCompileErrorIsADiagList: a CompileError hands every diagnostic to
// errors.As as a *diag.List, with lines as lines (never rows), and the list
// renders byte for byte as the error does.
func TestCompileErrorIsADiagList(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"registry.yaml":   {Data: []byte(testRegistry)},
		"policies/a.rego": {Data: []byte("package a\n\np := \n")},
		"policies/b.rego": {Data: []byte("package b\n\nq if {\n")},
	}
	_, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"})
	var ce *engine.CompileError
	require.ErrorAs(t, err, &ce)
	var list *diag.List
	require.ErrorAs(t, err, &list)
	require.Equal(t, ce.Error(), list.Error())
	require.Len(t, list.Diagnostics, len(ce.Diagnostics))
	for i, d := range list.Diagnostics {
		require.Equal(t, diag.Diagnostic{Code: "rego_parse_error", File: ce.Diagnostics[i].File, Line: ce.Diagnostics[i].Row,
			Column: ce.Diagnostics[i].Col, Message: ce.Diagnostics[i].Message}, d)
		require.Nil(t, d.Row)
		require.Positive(t, d.Line)
	}
}
