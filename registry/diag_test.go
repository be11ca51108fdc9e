package registry_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/registry"
)

// TestErrorsAreDiagLists: both registry errors hand every problem to
// errors.As as a *diag.List, rows as rows and lines as lines, and
// ValidationError's list renders byte for byte as the error does.
func TestErrorsAreDiagLists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.yaml")
	require.NoError(t, os.WriteFile(invalid, []byte("tools:\n  - {name: a, method: m}\n  - {name: a, method: m, arguments: [{name: x, type: strng}]}\n"), 0o600))
	_, err := registry.Load(invalid)
	var ve *registry.ValidationError
	require.ErrorAs(t, err, &ve)
	var list *diag.List
	require.ErrorAs(t, err, &list)
	require.Equal(t, ve.Error(), list.Error())
	require.Len(t, list.Diagnostics, len(ve.Problems))
	for i, d := range list.Diagnostics {
		p := ve.Problems[i]
		require.Equal(t, registry.CodeInvalid, d.Code)
		require.Equal(t, invalid, d.File)
		require.Zero(t, d.Line, "a registry row is not a line")
		require.NotNil(t, d.Row)
		require.Equal(t, p.Row, *d.Row)
		require.Equal(t, p.Field, d.Field)
		require.Equal(t, p.Message, d.Message)
	}

	broken := filepath.Join(dir, "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte("{\n\"tools\": [,]\n}\n"), 0o600))
	_, err = registry.Load(broken)
	var pe *registry.ParseError
	require.ErrorAs(t, err, &pe)
	list = nil
	require.ErrorAs(t, err, &list)
	require.Equal(t, []diag.Diagnostic{{Code: registry.CodeParse, File: broken, Line: pe.Line, Message: "not valid JSON: " + pe.Err.Error()}}, list.Diagnostics)
	require.Equal(t, 2, pe.Line)
	require.True(t, errors.Is(err, pe.Err))
}
