package config_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

// TestShadowAndPDPSettings: shadow (policy, registry; paths relative to the
// file) and pdpRoles from a config file and from flags, flags winning; a
// candidate registry without a candidate policy, an unknown shadow key and
// an empty PDP role are refused.
func TestShadowAndPDPSettings(t *testing.T) {
	t.Parallel()
	path, dir := writeConfig(t, "shadow:\n  policy: next\n  registry: next.yaml\npdpRoles: [pdp]\n")
	s, err := config.LoadServe([]string{"--config", path, "--ledger", "memory"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "next"), s.Shadow.Policy)
	require.Equal(t, filepath.Join(dir, "next.yaml"), s.Shadow.Registry)
	require.Equal(t, []string{"pdp"}, s.PDPRoles)
	require.True(t, s.Shadow.Enabled())

	s, err = config.LoadServe([]string{"--config", path, "--ledger", "memory", "--shadow-policy", "/p", "--pdp-role", "a", "--pdp-role", "b"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "/p", s.Shadow.Policy)
	require.Equal(t, []string{"a", "b"}, s.PDPRoles)

	_, err = config.LoadServe([]string{"--ledger", "memory", "--shadow-registry", "r.yaml"}, io.Discard)
	require.ErrorContains(t, err, "without a candidate policy")
	bad, _ := writeConfig(t, "shadow:\n  polcy: next\n")
	_, err = config.LoadServe([]string{"--config", bad, "--ledger", "memory"}, io.Discard)
	require.ErrorContains(t, err, "shadow")
	bad, _ = writeConfig(t, "pdpRoles: [\"\"]\n")
	_, err = config.LoadServe([]string{"--config", bad, "--ledger", "memory"}, io.Discard)
	require.Error(t, err)
}

// TestShadowBundleSetting: shadow.bundle (a URL, kept as given) from a
// config file and --shadow-bundle, the flag winning; a candidate bundle
// with a candidate policy or registry, and a URL that names no bundle, are
// refused.
func TestShadowBundleSetting(t *testing.T) {
	t.Parallel()
	path, _ := writeConfig(t, "shadow:\n  bundle: https://bundles.example.com/next.tar.gz\n")
	s, err := config.LoadServe([]string{"--config", path, "--ledger", "memory"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "https://bundles.example.com/next.tar.gz", s.Shadow.Bundle)
	require.True(t, s.Shadow.Enabled())

	s, err = config.LoadServe([]string{"--config", path, "--ledger", "memory", "--shadow-bundle", "oci://ghcr.io/acme/policy:next"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "oci://ghcr.io/acme/policy:next", s.Shadow.Bundle)

	for _, args := range [][]string{
		{"--shadow-bundle", "https://b.example.com/next.tar.gz", "--shadow-policy", "next"},
		{"--shadow-bundle", "https://b.example.com/next.tar.gz", "--shadow-registry", "next.yaml"},
		{"--shadow-bundle", "ftp://b.example.com/next.tar.gz"},
		{"--shadow-bundle", "oci://ghcr.io/acme/policy"},
	} {
		_, err = config.LoadServe(append([]string{"--ledger", "memory"}, args...), io.Discard)
		require.Error(t, err, args)
		require.ErrorContains(t, err, "shadow", args)
	}
	bad, _ := writeConfig(t, "shadow:\n  bundle: [a]\n")
	_, err = config.LoadServe([]string{"--config", bad, "--ledger", "memory"}, io.Discard)
	require.ErrorContains(t, err, "shadow")
}
