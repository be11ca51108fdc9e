package identity_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/identity"
)

// TestTokenFileErrorIsADiagList: every invalid entry, by line, with the
// digest prefix as its field and never a token.
func TestTokenFileErrorIsADiagList(t *testing.T) {
	t.Parallel()
	raw := strings.Repeat("t", 40)
	path := writeFile(t, "tokens.yaml", raw+": {subject: eve}\n"+identity.HashToken("c")+": {subject: \"\"}\n")
	_, err := identity.LoadTokens(path)
	var list *diag.List
	require.ErrorAs(t, err, &list)
	require.Len(t, list.Diagnostics, 2)
	for i, d := range list.Diagnostics {
		require.Equal(t, identity.CodeTokensInvalid, d.Code)
		require.Equal(t, path, d.File)
		require.Equal(t, i+1, d.Line)
		require.Nil(t, d.Row)
		require.NotContains(t, d.String(), raw)
	}
	require.Equal(t, identity.HashToken("c")[:12], list.Diagnostics[1].Field)
}
