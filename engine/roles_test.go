package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

// TestPolicyRoles: the roles the policies compare input.caller.roles with
// are found, whatever the form of the comparison; other literals, the
// reference's own keys and roles of other inputs are not.
func TestPolicyRoles(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("sections:\n  s: {roles: [admin]}\ntools:\n  - {name: echo, method: demo.echo}\n"), 0o644))
	pol := filepath.Join(dir, "rego")
	require.NoError(t, os.MkdirAll(pol, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pol, "grant.rego"), []byte(`package toolgate.grant

granted := {"echo"} if "contractor" in input.caller.roles

intern if input.caller.roles[_] == "intern"

other if input.caller.subject == "not-a-role"

named := "not-a-role-either"

ops if {
	rs := input.caller.roles
	some r in rs
	r == "ops-by-variable"
}

first if [1, 2][0] == input.caller.roles[0]
`), 0o644))
	eng, err := engine.New(context.Background(), engine.Source{Registry: reg, Policies: pol})
	require.NoError(t, err)
	require.Equal(t, []string{"contractor", "intern"}, eng.Current().PolicyRoles())
}
