package config_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestIdempotencyKeySetting: the _meta key of the idempotency ledger comes
// from idempotencyKey in the file or --idempotency-key (which wins); unset
// is empty (the ledger's default, festi/idempotencyKey); an empty or
// non-string key in the file is an error naming it.
func TestIdempotencyKeySetting(t *testing.T) {
	s, err := config.LoadServe(nil, io.Discard)
	require.NoError(t, err)
	require.Empty(t, s.IdempotencyKey)

	cfg, _ := writeConfig(t, "idempotencyKey: acme/requestId\n")
	s, err = config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "acme/requestId", s.IdempotencyKey)

	s, err = config.LoadServe([]string{"--config", cfg, "--idempotency-key", "other/key"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "other/key", s.IdempotencyKey)

	for _, bad := range []string{`idempotencyKey: ""`, "idempotencyKey: [a]", "idempotencyKey: null"} {
		cfg, _ := writeConfig(t, bad+"\n")
		_, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
		require.ErrorContains(t, err, "idempotencyKey", bad)
	}
}
