package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// faultStore is a Store whose calls fail for the idempotency keys that name
// the failure.
type faultStore struct{ store.Store }

var errStore = errors.New("ledger store: connection refused (postgres://db:5432)")

func (s faultStore) Claim(ctx context.Context, key store.Key, h string, now time.Time, lt store.Lifetimes) (store.ClaimResult, error) {
	if key.ID == "claim-error" {
		return store.ClaimResult{}, errStore
	}
	return s.Store.Claim(ctx, key, h, now, lt)
}

func (s faultStore) Complete(ctx context.Context, key store.Key, token string, result []byte, now time.Time) error {
	if key.ID == "complete-error" {
		return errStore
	}
	return s.Store.Complete(ctx, key, token, result, now)
}

func (s faultStore) Release(ctx context.Context, key store.Key, token string) error {
	if key.ID == "release-error" {
		return errStore
	}
	return s.Store.Release(ctx, key, token)
}

// TestStoreFaults is the ledger part of the fault table (docs/testing.md;
// the rest is in mcpadapter/faults_test.go): a store that fails to claim fails the
// call closed (the method never runs), one that fails to complete or to
// release is logged and ignored (the answer stands). The after hooks see
// each call once and the next call is served.
func TestStoreFaults(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"registry.yaml":       {Data: []byte("tools:\n  - { name: probe, method: test.probe }\n  - { name: boom, method: test.boom }\n")},
		"policies/grant.rego": {Data: []byte("package toolgate.grant\n")},
	}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		runs int
		ends []toolcall.Outcome
	)
	methods := methods.Map{}
	methods.Register("test.probe", func(context.Context, struct{}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		runs++
		return "probe ran", nil
	})
	methods.Register("test.boom", func(context.Context, struct{}) (string, error) {
		return "", errors.New("boom")
	})
	a := mcpadapter.New(mcpadapter.Options{Revisions: e, Methods: methods,
		Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: "alice"})})
	a.AddHook(New(faultStore{store.NewMemoryStore()}, Options{}).Hook())
	a.AddHook(hooks.Hook{Name: "record", After: func(_ context.Context, _ *hooks.CallContext, end *hooks.Record) error {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, end.Outcome)
		return nil
	}})
	call := func(tool string, meta mcp.Meta) (string, []toolcall.Outcome, int) {
		mu.Lock()
		ends, runs = nil, 0
		mu.Unlock()
		res := a.Call(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
			Name: tool, Arguments: json.RawMessage(`{}`), Meta: meta}})
		mu.Lock()
		defer mu.Unlock()
		return res.Content[0].(*mcp.TextContent).Text, ends, runs
	}
	const internal = "Error: An internal error occurred while executing the tool."
	for _, tc := range []struct {
		key, tool, want string
		outcome         toolcall.Outcome
		runs            int
	}{
		{key: "claim-error", tool: "probe", want: internal, outcome: toolcall.OutcomeFailed},
		{key: "complete-error", tool: "probe", want: "probe ran", outcome: toolcall.OutcomeResult, runs: 1},
		{key: "release-error", tool: "boom", want: internal, outcome: toolcall.OutcomeFailed},
	} {
		t.Run(tc.key, func(t *testing.T) {
			text, outcomes, runs := call(tc.tool, mcp.Meta{"festi/idempotencyKey": tc.key})
			require.Equal(t, tc.want, text)
			require.Equal(t, []toolcall.Outcome{tc.outcome}, outcomes, "the after hooks see the call once")
			require.Equal(t, tc.runs, runs)

			text, outcomes, runs = call("probe", mcp.Meta{"festi/idempotencyKey": "next-" + tc.key})
			require.Equal(t, "probe ran", text, "the next call is served")
			require.Equal(t, []toolcall.Outcome{toolcall.OutcomeResult}, outcomes)
			require.Equal(t, 1, runs)
		})
	}
}
