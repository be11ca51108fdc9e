package config_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/upstream"
)

// TestUpstreamCredentialSettings: an upstream's headers, env, inherit_env
// and auth in the config file (docs/contract.md §17) become the pool's
// configuration as written (${...} resolved later, by the pool); settings
// that cannot work are problems naming the upstream and the key, never a
// value.
func TestUpstreamCredentialSettings(t *testing.T) {
	t.Parallel()
	cfg, _ := writeConfig(t, `upstreams:
  - name: saas
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer ${TOKEN}", X-Team: blue}
  - name: local
    command: server --flag
    env: {B: "${file:/run/secrets/b}", A: x}
    inherit_env: true
  - name: crm
    url: https://crm.example.com/mcp
    auth: {type: token_exchange, token_url: "https://idp.example/token", client_id: gw, client_secret: "${S}", audience: crm, resource: "https://crm.example.com/mcp", scopes: [crm.read]}
`)
	s, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
	require.NoError(t, err)
	saas, local, crm := s.Upstreams[0].PoolConfig(), s.Upstreams[1].PoolConfig(), s.Upstreams[2].PoolConfig()
	require.Equal(t, map[string]string{"Authorization": "Bearer ${TOKEN}", "X-Team": "blue"}, saas.Headers)
	require.Equal(t, []string{"A=x", "B=${file:/run/secrets/b}"}, local.Env, "sorted by name")
	require.True(t, local.InheritEnv)
	require.Equal(t, &upstream.Auth{Type: "token_exchange", TokenURL: "https://idp.example/token", ClientID: "gw", ClientSecret: "${S}",
		Audience: "crm", Resource: "https://crm.example.com/mcp", Scopes: []string{"crm.read"}}, crm.Auth)

	for _, tc := range []struct{ doc, want string }{
		{"upstreams:\n  - {name: a, command: x, headers: {K: v}}\n", "upstreams[0] (a): headers are for an HTTP upstream"},
		{"upstreams:\n  - {name: a, url: \"https://a.example\", env: {K: v}}\n", "env and inherit_env are for a stdio upstream"},
		{"upstreams:\n  - {name: a, url: \"https://a.example\", import: true, auth: {type: token_exchange, token_url: \"https://i.example/t\", client_id: c, audience: a}}\n", "import: a token_exchange upstream"},
		{"upstreams:\n  - {name: a, url: \"https://a.example\", auth: {type: client_credentials, client_id: c, client_secret: hunter2-literal}}\n", "auth.token_url: want an http(s) URL"},
		{"upstreams:\n  - {name: a, url: \"https://a.example\", auth: {type: x, tokenurl: y}}\n", `unknown key "tokenurl" in auth`},
		{"upstreams:\n  - {name: a, url: \"https://a.example\", headers: [a]}\n", "headers: wrong kind of value"},
	} {
		cfg, _ := writeConfig(t, tc.doc)
		_, err := config.LoadServe([]string{"--config", cfg}, io.Discard)
		require.ErrorContains(t, err, tc.want, tc.doc)
		require.NotContains(t, err.Error(), "hunter2")
	}
}
