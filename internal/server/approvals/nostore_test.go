package approvals_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/mcpadapter"
)

// TestApprovalRuleWithoutStoreFailsClosed: an adapter without
// Options.Approvals never runs a call an approval rule names.
func TestApprovalRuleWithoutStoreFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "registry.yaml"), []byte(testRegistry), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "rego"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rego", "call.rego"), []byte(testPolicy), 0o600))
	eng, err := engine.New(context.Background(), toolgate.Source(filepath.Join(dir, "registry.yaml"), filepath.Join(dir, "rego")), engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	ran := 0
	methods := demo.Methods()
	methods.Register("test.run", func(context.Context, struct {
		Target string `json:"target"`
	}) (string, error) {
		ran++
		return "ran", nil
	})
	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: methods, Caller: mcpadapter.StaticCaller(alice)})
	st, ct := mcp.NewInMemoryTransports()
	srv := a.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	text, isErr := call(t, cs, "wipe", "db1")
	assert.True(t, isErr)
	assert.Equal(t, "Error: An internal error occurred while executing the tool.", text)
	assert.Zero(t, ran)
}
