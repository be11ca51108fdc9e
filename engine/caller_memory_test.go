package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/benchdata"
	"github.com/toolgate/toolgate/toolcall"
)

// TestPerCallerMemoryIndependentOfRows: what a revision keeps per caller
// (a memoised decision, a split residual) costs the same at 100 rows as at
// 4 000 when the callers' values are equal: the values themselves are kept
// once (canon.go), each caller holds O(1) besides. A copy of anything as
// large as the registry per caller (a split residual that held its first
// call's override set, say) makes the per-caller growth follow the rows.
//
// Not parallel: it reads the live heap, which other tests running at the
// same time would change.
func TestPerCallerMemoryIndependentOfRows(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates a policy over 4 000 rows once per caller")
	}
	const callers = 128
	for _, p := range []struct{ name, policy string }{
		{"memoised", benchGrant},
		{"split", benchGrantMeta},
	} {
		t.Run(p.name, func(t *testing.T) {
			small := perCallerHeap(t, 100, callers, p.policy)
			large := perCallerHeap(t, 4000, callers, p.policy)
			t.Logf("live heap per caller: %.0f B at 100 rows, %.0f B at 4000 rows", small, large)
			// Generous: a per-caller copy of the rows' names at 4 000 rows
			// is ~40 KiB, far beyond either bound.
			require.Less(t, large, 2*small+4096, "per-caller memory grows with the registry")
		})
	}
}

// TestPerRoleSetMemoryIsWordsPerRow: a caller view (one per role set,
// maxCallerViews of them) holds a base flag and a pointer per row; the row
// objects of input.tools are the revision's, shared by every view. A view
// holding its own row objects costs ~1 KiB per row.
//
// Not parallel: it reads the live heap.
func TestPerRoleSetMemoryIsWordsPerRow(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates a policy over 4 000 rows once per role set")
	}
	const rows, roleSets = 4000, 32
	// Every role set sees the same rows: only the view differs.
	perRow := heapPerAsk(t, rows, benchGrant, roleSets, "role-", func(role string) *toolcall.Caller {
		return &toolcall.Caller{Subject: "s", Roles: []string{"contractor", role}}
	}) / rows
	t.Logf("live heap per role set: %.1f B per row", perRow)
	require.Less(t, perRow, 64.0, "a caller view copies the rows")
}

// perCallerHeap returns the live heap each of callers distinct callers with
// one role set adds to a revision of rows rows, after one caller with the
// same roles has been asked (so that what they share exists already).
func perCallerHeap(t *testing.T, rows, callers int, policy string) float64 {
	t.Helper()
	return heapPerAsk(t, rows, policy, callers, "caller-", func(subject string) *toolcall.Caller {
		return &toolcall.Caller{Subject: subject, Roles: []string{"manager", "contractor"}}
	})
}

// heapPerAsk returns the live heap each of n callers adds to a revision of
// rows rows under policy, after the caller named "warm" has been asked
// (so that what they share exists already). caller makes the caller of a
// name: "warm", then prefix followed by 0 to n-1. Each must be granted
// echo.
func heapPerAsk(t *testing.T, rows int, policy string, n int, prefix string, caller func(name string) *toolcall.Caller) float64 {
	t.Helper()
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(benchRegistry(rows))}, "policies/grant.rego": {Data: []byte(policy)}}
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	rev := e.Current()
	ask := func(name string) {
		ok, err := rev.Grant(ctx, caller(name), benchReq).Allowed("echo")
		require.NoError(t, err)
		require.True(t, ok, "echo is not granted")
	}
	ask("warm")
	before := benchdata.LiveHeap()
	for i := range n {
		ask(fmt.Sprintf("%s%d", prefix, i))
	}
	after := benchdata.LiveHeap()
	runtime.KeepAlive(rev)
	runtime.KeepAlive(e)
	return (float64(after) - float64(before)) / float64(n)
}
