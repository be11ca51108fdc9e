package config_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/config"
)

// TestObserveSettings: --decision-log / decisionLog is a URL or a file
// (relative to the config file), --otel-endpoint / otelEndpoint an http(s)
// URL (docs/contract.md §14); flags win over the file.
func TestObserveSettings(t *testing.T) {
	t.Parallel()
	cfg, dir := writeConfig(t, "decisionLog: decisions.jsonl\notelEndpoint: http://collector:4318\n")
	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "decisions.jsonl"), s.DecisionLog)
	assert.Equal(t, "http://collector:4318", s.OtelEndpoint)
	s, err = config.LoadServe([]string{"--config", cfg, "--decision-log", "https://logs.example/logs", "--otel-endpoint", "https://otel.example"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "https://logs.example/logs", s.DecisionLog)
	assert.Equal(t, "https://otel.example", s.OtelEndpoint)
	for flag, bad := range map[string]string{"--otel-endpoint": "collector:4318", "--decision-log": "https://"} {
		_, err = config.LoadServe([]string{flag, bad}, io.Discard)
		var ce *config.Error
		require.ErrorAs(t, err, &ce, bad)
		assert.Equal(t, flag, ce.Problems[0].Key, bad)
	}
}
