package policytest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/internal/cli/policytest"
)

// TestErrorIsADiagList: a policytest.Error hands every diagnostic to
// errors.As as a *diag.List that renders byte for byte as the error does.
func TestErrorIsADiagList(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"broken.rego": "package broken\n\nq if {\n"})
	_, err := policytest.Run(context.Background(), policytest.Options{Paths: []string{dir}})
	var perr *policytest.Error
	require.ErrorAs(t, err, &perr)
	var list *diag.List
	require.ErrorAs(t, err, &list)
	require.Equal(t, perr.Error(), list.Error())
	require.Equal(t, []diag.Diagnostic{{Code: "rego_parse_error", File: filepath.Join(dir, "broken.rego"), Line: 4, Column: perr.Diagnostics[0].Location.Col,
		Message: perr.Diagnostics[0].Message}}, list.Diagnostics)
}
