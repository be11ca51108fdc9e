package config_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
)

func TestBundleSettings(t *testing.T) {
	t.Parallel()
	path, dir := writeConfig(t, `
bundle:
  url: https://bundles.example.com/toolgate.tar.gz
  polling: { min_delay_seconds: 10, max_delay_seconds: 20 }
  signing: { key_file: pub.pem, keyid: prod, algorithm: ES256, exclude_files: [x.json] }
`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pub.pem"), []byte("key"), 0o600))
	s, err := config.LoadServe([]string{"--config", path}, io.Discard)
	require.NoError(t, err)
	b := s.Bundle
	require.Equal(t, "https://bundles.example.com/toolgate.tar.gz", b.URL)
	require.Equal(t, int64(10), *b.Polling.MinDelaySeconds)
	require.Equal(t, int64(20), *b.Polling.MaxDelaySeconds)
	require.Equal(t, filepath.Join(dir, "pub.pem"), b.Signing.KeyFile) // relative to the file
	require.Equal(t, "prod", b.Signing.KeyID)
	require.Equal(t, "ES256", b.Signing.Algorithm)
	require.Equal(t, []string{"x.json"}, b.Signing.ExcludeFiles)

	// Flags win.
	key := filepath.Join(dir, "other.pem")
	require.NoError(t, os.WriteFile(key, []byte("key"), 0o600))
	s, err = config.LoadServe([]string{"--config", path, "--bundle", "http://127.0.0.1:9/b.tar.gz", "--bundle-verification-key", key}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9/b.tar.gz", s.Bundle.URL)
	require.Equal(t, key, s.Bundle.Signing.KeyFile)
}

func TestBundleSettingsOCI(t *testing.T) {
	t.Parallel()
	path, dir := writeConfig(t, `
bundle:
  url: http://127.0.0.1:5000/org/policy:v1
  type: oci
  credentials: { bearer: { token_path: token, scheme: Bearer } }
`)
	s, err := config.LoadServe([]string{"--config", path}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "oci", s.Bundle.Type)
	require.True(t, s.Bundle.OCI())
	require.Equal(t, filepath.Join(dir, "token"), s.Bundle.Credentials.Bearer.TokenPath) // relative to the file
	require.Equal(t, "Bearer", s.Bundle.Credentials.Bearer.Scheme)

	s, err = config.LoadServe([]string{"--bundle", "oci://ghcr.io/org/policy:v1"}, io.Discard)
	require.NoError(t, err)
	require.True(t, s.Bundle.OCI())
	require.False(t, s.Bundle.RefuseOlderRevisions, "off by default")
}

// TestBundleRefuseOlderRevisionsSetting: bundle.refuse_older_revisions is
// a boolean.
func TestBundleRefuseOlderRevisionsSetting(t *testing.T) {
	t.Parallel()
	path, _ := writeConfig(t, "bundle: { url: http://x/b, refuse_older_revisions: true }\n")
	s, err := config.LoadServe([]string{"--config", path}, io.Discard)
	require.NoError(t, err)
	require.True(t, s.Bundle.RefuseOlderRevisions)
	path, _ = writeConfig(t, "bundle: { url: http://x/b, refuse_older_revisions: yes please }\n")
	_, err = config.LoadServe([]string{"--config", path}, io.Discard)
	require.ErrorContains(t, err, "bundle.refuse_older_revisions: want true or false")
}

func TestBundleSettingsProblems(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		file string
		args []string
		want []string
	}{
		"unknown key":     {file: "bundle: { url: http://x/b, resource: y }", want: []string{`unknown key "resource" in bundle`}},
		"polling alone":   {file: "bundle: { url: http://x/b, polling: { min_delay_seconds: 1 } }", want: []string{"set both min_delay_seconds and max_delay_seconds"}},
		"polling not int": {file: "bundle: { url: http://x/b, polling: { min_delay_seconds: soon, max_delay_seconds: 2 } }", want: []string{"bundle.polling.min_delay_seconds", "a whole number of seconds"}},
		"not http":        {args: []string{"--bundle", "file:///b.tar.gz"}, want: []string{"want an http(s) URL of a bundle"}},
		"oci without tag": {args: []string{"--bundle", "oci://ghcr.io/org/policy"}, want: []string{"no tag or digest"}},
		"unknown type":    {file: "bundle: { url: http://x/b, type: s3 }", want: []string{"bundle.type", `"http" (a bundle server) or "oci"`}},
		"unknown bearer":  {file: "bundle: { url: http://x/b, credentials: { bearer: { token: t } } }", want: []string{`unknown key "token" in bundle.credentials.bearer`}},
		"token alone":     {file: "bundle: { credentials: { bearer: { token_path: t } } }", want: []string{"bundle.credentials.bearer.token_path", "needs bundle.url"}},
		"with a registry": {args: []string{"--bundle", "http://x/b", "--registry", "r.yaml"}, want: []string{"not both"}},
		"key without url": {args: []string{"--bundle-verification-key", "k.pem"}, want: []string{"needs bundle.url (--bundle)"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := tc.args
			if tc.file != "" {
				path, _ := writeConfig(t, tc.file)
				args = append([]string{"--config", path}, args...)
			}
			_, err := config.LoadServe(args, io.Discard)
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}
