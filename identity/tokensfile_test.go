package identity_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
)

// TestTokensFileReload: Reload swaps in an edited file's tokens; a file
// that does not load (a pasted token as key, a missing file) keeps the
// last good tokens serving and says why; an unchanged file is no change.
func TestTokensFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	write := func(body string) { require.NoError(t, os.WriteFile(path, []byte(body), 0o600)) }
	entry := func(token, subject string) string {
		return `"` + identity.HashToken(token) + `": { subject: ` + subject + ", roles: [user] }\n"
	}
	write(entry("t-ann", "ann"))
	f, err := identity.OpenTokensFile(path)
	require.NoError(t, err)
	c, ok := f.Lookup("t-ann")
	require.True(t, ok)
	require.Equal(t, "ann", c.Subject)

	changed, err := f.Reload()
	require.NoError(t, err)
	require.False(t, changed, "same content")

	write(entry("t-bob", "bob"))
	changed, err = f.Reload()
	require.NoError(t, err)
	require.True(t, changed)
	_, ok = f.Lookup("t-ann")
	require.False(t, ok, "ann's entry was removed: revoked")
	_, ok = f.Lookup("t-bob")
	require.True(t, ok)

	write("t-carol: { subject: carol }\n")
	changed, err = f.Reload()
	var tfe *identity.TokenFileError
	require.ErrorAs(t, err, &tfe)
	require.Equal(t, path, tfe.Path)
	require.NotContains(t, err.Error(), "t-carol", "a pasted token is never shown")
	require.False(t, changed)
	_, ok = f.Lookup("t-bob")
	require.True(t, ok, "the last good tokens keep serving")

	require.NoError(t, os.Remove(path))
	_, err = f.Reload()
	require.Error(t, err)
	require.Equal(t, 1, f.Len())
}
