package config_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestObserveSettings: --decision-log / decisionLog is a URL or a file
// (relative to the config file), --otel-endpoint / otelEndpoint an http(s)
// URL (docs/contract.md §14); flags win over the file.
func TestObserveSettings(t *testing.T) {
	t.Parallel()
	cfg, dir := writeConfig(t, "decisionLog: decisions.jsonl\notelEndpoint: http://collector:4318\n")
	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "decisions.jsonl"), s.DecisionLog.Target)
	assert.Equal(t, "http://collector:4318", s.Tracing.Endpoint)
	s, err = config.LoadServe([]string{"--config", cfg, "--decision-log", "https://logs.example/logs", "--otel-endpoint", "https://otel.example"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "https://logs.example/logs", s.DecisionLog.Target)
	assert.Equal(t, "https://otel.example", s.Tracing.Endpoint)
	for flag, bad := range map[string]string{"--otel-endpoint": "collector:4318", "--decision-log": "https://"} {
		_, err = config.LoadServe([]string{flag, bad}, io.Discard)
		var ce *config.Error
		require.ErrorAs(t, err, &ce, bad)
		assert.Equal(t, flag, ce.Problems[0].Key, bad)
	}
}

// TestDecisionLogHashKeySetting: the decision log's
// hash key is read from ${VAR} or a file (relative to the config file),
// never written in the settings; a short, missing or unused key is a
// problem that never shows the key. trustTraceparent is a boolean, off by
// default.
func TestDecisionLogHashKeySetting(t *testing.T) {
	key := "0123456789abcdef0123456789abcdef-secret"
	t.Setenv("TOOLGATE_TEST_DL_KEY", key)
	t.Setenv("TOOLGATE_TEST_DL_SHORT", "short-secret")
	cfg, dir := writeConfig(t, "decisionLog: d.jsonl\ndecisionLogHashKey: dl.key\ntrustTraceparent: true\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dl.key"), []byte(key+"\n"), 0o600))
	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "dl.key"), s.DecisionLog.HashKey)
	assert.True(t, s.Tracing.TrustTraceparent)
	got, err := s.DecisionLog.ReadHashKey()
	require.NoError(t, err)
	assert.Equal(t, key, string(got), "one trailing newline dropped")

	s, err = config.LoadServe([]string{"--decision-log", "d.jsonl", "--decision-log-hash-key", "${TOOLGATE_TEST_DL_KEY}"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, s.Tracing.TrustTraceparent)
	got, err = s.DecisionLog.ReadHashKey()
	require.NoError(t, err)
	assert.Equal(t, key, string(got))

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"short":   {[]string{"--decision-log", "d.jsonl", "--decision-log-hash-key", "${TOOLGATE_TEST_DL_SHORT}"}, "the key is 12 bytes; want at least 32"},
		"unset":   {[]string{"--decision-log", "d.jsonl", "--decision-log-hash-key", "${TOOLGATE_TEST_DL_NONE}"}, "the environment variable TOOLGATE_TEST_DL_NONE is not set"},
		"no file": {[]string{"--decision-log", "d.jsonl", "--decision-log-hash-key", filepath.Join(dir, "none")}, "cannot read the key file"},
		"no log":  {[]string{"--decision-log-hash-key", "${TOOLGATE_TEST_DL_KEY}"}, "needs decision_log (--decision-log)"},
	} {
		_, err := config.LoadServe(tc.args, io.Discard)
		var ce *config.Error
		require.ErrorAs(t, err, &ce, name)
		assert.Equal(t, "--decision-log-hash-key", ce.Problems[0].Key, name)
		assert.Contains(t, ce.Error(), tc.want, name)
		assert.NotContains(t, ce.Error(), "secret", name)
	}
}
