package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// TestRoleSetsNeverShareACachedView: the
// per-revision view of a role set is keyed so that a role holding a NUL
// ("admin\x00zz") is not the set {admin, zz}, in either order of arrival:
// the single odd role gets no section, and the two roles keep theirs.
func TestRoleSetsNeverShareACachedView(t *testing.T) {
	cacheModes(t, testRoleSetsNeverShareACachedView)
}

func testRoleSetsNeverShareACachedView(t *testing.T, opts ...engine.Option) {
	two := &toolcall.Caller{Subject: "two", Roles: []string{"admin", "zz"}}
	one := &toolcall.Caller{Subject: "one", Roles: []string{"admin\x00zz"}}
	twoWant := []string{"echo", "getReward", "report", "execUrl"}
	oneWant := []string{"echo", "execUrl"}
	for _, order := range [][]*toolcall.Caller{{two, one}, {one, two}} {
		rev := newEngine(t, nil, opts...).Current()
		for _, c := range order {
			want := oneWant
			if c == two {
				want = twoWant
			}
			d := rev.Grant(context.Background(), c, listReq)
			require.Equal(t, want, d.Granted(), "caller %q after %q", c.Roles, order[0].Roles)
		}
	}
}
