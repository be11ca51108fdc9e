package regoload

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWalkNamesAMissingDirectory: a policy directory that is not there is
// named in the error as given, not as os.DirFS's ".".
func TestWalkNamesAMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no-such-policies")
	_, err := Walk(nil, dir, WalkOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), dir)
	require.NotContains(t, err.Error(), "open .:")
}
