package toolgate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// TestBundledExampleLoads loads the bundled registry and policies the way
// `toolgate serve` does with no flags, and checks the decisions the README
// tour relies on.
func TestBundledExampleLoads(t *testing.T) {
	t.Parallel()
	e, err := engine.New(context.Background(), engine.Source{FS: toolgate.Bundled, Registry: toolgate.BundledRegistryPath, Policies: toolgate.BundledPolicyDir})
	require.NoError(t, err)
	rev := e.Current()
	require.Empty(t, rev.Registry().Warnings())
	list := engine.Request{Method: engine.MethodList}
	cases := []struct {
		caller  *toolcall.Caller
		outcome engine.Outcome
		granted []string
	}{
		{&toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}, engine.NoOverride,
			[]string{"echo", "add", "getReward", "price", "fail", "inner", "count", "sleep", "execUrl", "resetCounter"}},
		{&toolcall.Caller{Subject: "max", Roles: []string{"manager"}}, engine.NoOverride,
			[]string{"echo", "add", "getReward", "price", "fail", "inner", "count", "sleep"}},
		{&toolcall.Caller{Subject: "cid", Roles: []string{"manager", "contractor"}}, engine.Override,
			[]string{"echo", "add", "getReward", "price", "fail", "inner", "sleep"}},
	}
	for _, tc := range cases {
		d := rev.Grant(context.Background(), tc.caller, list)
		require.NoError(t, d.Err)
		require.Equal(t, tc.outcome, d.Outcome, tc.caller.Subject)
		require.Equal(t, tc.granted, d.Granted(), tc.caller.Subject)
	}
}
