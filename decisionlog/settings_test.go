package decisionlog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
)

// TestCheckTarget: a URL target needs a host; anything else is a file,
// checked when opened.
func TestCheckTarget(t *testing.T) {
	t.Parallel()
	for target, ok := range map[string]bool{
		"https://logs.example.com/v1": true, "http:///v1": false, "decisions.jsonl": true, "": true,
	} {
		assert.Equal(t, ok, decisionlog.CheckTarget(target) == nil, target)
	}
}

// TestReadHashKey: from ${VAR} or a file (one trailing newline ignored),
// at least MinHashKeyLen bytes; an error never holds the key.
func TestReadHashKey(t *testing.T) {
	key := strings.Repeat("k", decisionlog.MinHashKeyLen)
	t.Setenv("TOOLGATE_TEST_HASH_KEY", key)
	got, err := decisionlog.ReadHashKey("${TOOLGATE_TEST_HASH_KEY}")
	require.NoError(t, err)
	assert.Equal(t, key, string(got))

	file := filepath.Join(t.TempDir(), "k")
	require.NoError(t, os.WriteFile(file, []byte(key+"\n"), 0o600))
	got, err = decisionlog.ReadHashKey(file)
	require.NoError(t, err)
	assert.Equal(t, key, string(got))

	require.NoError(t, os.WriteFile(file, []byte("short-secret\n"), 0o600))
	_, err = decisionlog.ReadHashKey(file)
	require.ErrorContains(t, err, "the key is 12 bytes; want at least 32")
	assert.NotContains(t, err.Error(), "short-secret")

	got, err = decisionlog.ReadHashKey("")
	assert.NoError(t, err)
	assert.Nil(t, got)
}
