package inspect

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
)

// TestFindingDiag: a finding and its diagnostic say the same where.
func TestFindingDiag(t *testing.T) {
	t.Parallel()
	f := Finding{Code: CodeMethodUnknown, File: "r.yaml", Row: rowPtr(2), Tool: "echo", Field: "method", Message: "m"}
	require.Equal(t, f.Where(), f.Diag().Where())
	f = Finding{Code: CodePolicyCompile, File: "rego/a.rego", Line: 3, Col: 2, Message: "m"}
	require.Equal(t, diag.Diagnostic{Code: CodePolicyCompile, File: "rego/a.rego", Line: 3, Column: 2, Message: "m"}, f.Diag())
	r := &CheckReport{Errors: []Finding{f}}
	require.Equal(t, []diag.Diagnostic{f.Diag()}, diag.From(r.Err()))
	require.NoError(t, (&CheckReport{}).Err())
}
