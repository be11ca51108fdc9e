package engine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
)

// sharedSetPolicy keeps visible for a caller on a call that does not grant
// it (deny), so the set is published before any call returns it.
const sharedSetPolicy = `package toolgate.grant

visible := {t.name | some t in input.tools; t.base}

granted := visible if {
	count(visible) > 0
	not input.request.meta.deny
}
`

var denyReq = engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(json.RawMessage(`{"deny":true}`))}

// TestSplitPublishesFrozenValues (run with -race): a kept value is read by
// every evaluation of its caller without synchronisation, so nothing may
// write to it after it is published. OPA sorts a set's keys in place on its
// first ordered use (Compare, Foreach, Slice), while Intersect, which
// readGranted uses, reads them unguarded. Here one goroutine makes the
// first call that returns the kept set (the canonical copy compares it,
// which sorted it) while another reads it as a concurrent call would: with
// no synchronisation between them the race detector reports the sort
// whichever runs first.
func TestSplitPublishesFrozenValues(t *testing.T) {
	t.Parallel()
	rev := newEngine(t, map[string]string{"grant.rego": sharedSetPolicy}).Current()
	ctx := context.Background()
	require.Equal(t, engine.NoOverride, rev.Grant(ctx, dave, denyReq).Outcome)
	sets := rev.PreloadedSets(dave)
	require.Len(t, sets, 1)
	names := ast.NewSet(ast.StringTerm("echo"), ast.StringTerm("getReward"), ast.StringTerm("execUrl"))
	var wg sync.WaitGroup
	wg.Go(func() {
		if got := rev.Grant(ctx, dave, listReq).Granted(); len(got) != 3 {
			t.Errorf("granted %v", got)
		}
	})
	wg.Go(func() {
		if n := sets[0].Intersect(names).Len(); n != 3 {
			t.Errorf("intersection of %d", n)
		}
	})
	wg.Wait()
}
