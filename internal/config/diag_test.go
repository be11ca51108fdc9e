package config_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/internal/config"
)

// TestErrorIsADiagList: every problem of a config file, with its line and
// its setting as the field.
func TestErrorIsADiagList(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "registry: r.yaml\nwatch: maybe\n")
	_, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	var list *diag.List
	require.ErrorAs(t, err, &list)
	require.Len(t, list.Diagnostics, len(ce.Problems))
	for i, d := range list.Diagnostics {
		require.Equal(t, config.CodeInvalid, d.Code)
		require.Equal(t, ce.Problems[i].Line, d.Line)
		require.Equal(t, ce.Problems[i].Key, d.Field)
		require.Equal(t, ce.Problems[i].Message, d.Message)
	}
	require.Equal(t, 2, list.Diagnostics[0].Line)
}
