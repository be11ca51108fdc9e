package config_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestApprovalWebhook: --approval-webhook / approvalWebhook is an http(s)
// URL (docs/contract.md §13); the flag wins over the file.
func TestApprovalWebhook(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, "approvalWebhook: https://chat.example/hook\n")
	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "https://chat.example/hook", s.Approvals.Webhook)
	s, err = config.LoadServe([]string{"--config", cfg, "--approval-webhook", "http://127.0.0.1:9/x"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:9/x", s.Approvals.Webhook)
	for _, bad := range []string{"chat.example/hook", "ftp://x/y", "https://", "::"} {
		_, err = config.LoadServe([]string{"--approval-webhook", bad}, io.Discard)
		var ce *config.Error
		require.ErrorAs(t, err, &ce, bad)
		assert.Equal(t, "--approval-webhook", ce.Problems[0].Key, bad) // named as the flag it came from
	}
}
