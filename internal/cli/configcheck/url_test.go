package configcheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/inspect"
)

// TestCheckURLCredentialLiteral: an upstream url carrying a credential
// written in the config file (user information, a query parameter named
// like one) is a credential_literal warning naming the setting and the
// parameter, never the value; references and plain parameters are not.
func TestCheckURLCredentialLiteral(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`ledger: memory
upstreams:
  - {name: q, url: "https://mcp.example.com/mcp?region=eu&api_key=S3CRET-1"}
  - {name: sas, url: "https://mcp.example.com/mcp?sv=2024&sig=S3CRET-2"}
  - {name: pw, url: "https://svc:S3CRET-3@mcp.example.com/mcp"}
  - {name: tok, url: "https://S3CRET-4@mcp.example.com/mcp"}
  - {name: ref, url: "https://svc:${PW}@mcp.example.com/mcp?token=${TOKEN}&key=${file:/run/secrets/key}&region=eu"}
  - {name: whole, url: "${UPSTREAM_URL}"}
  - {name: plain, url: "https://mcp.example.com/mcp?region=eu&page=2"}
  - {name: user, url: "https://svc:@mcp.example.com/mcp"}
`), 0o600))
	rep := inspect.Check(context.Background(), inspect.CheckOptions{Source: source(baseRegistry, nil), Config: File(path)})
	for _, f := range rep.Errors {
		require.NotEqual(t, inspect.CodeConfigInvalid, f.Code, "%s", f)
	}
	var got []string
	for _, f := range rep.Warnings {
		require.NotContains(t, f.String(), "S3CRET")
		if f.Code == inspect.CodeCredentialLiteral {
			got = append(got, f.Field+": "+strings.SplitN(f.Message, " is written", 2)[0])
		}
	}
	require.Equal(t, []string{
		`upstreams[0] (q).url: its query parameter "api_key"`,
		`upstreams[1] (sas).url: its query parameter "sig"`,
		`upstreams[2] (pw).url: its user information`,
		`upstreams[3] (tok).url: its user information`,
	}, got)
}
