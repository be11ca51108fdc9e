package approvals_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/testkit/pgtest"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// storeKinds opens a fresh store of each kind; PostgreSQL only where
// TOOLGATE_TEST_POSTGRES names one (scripts/pg-start).
var storeKinds = []struct {
	name string
	open func(t testing.TB) store.ApprovalStore
}{
	{"memory", func(testing.TB) store.ApprovalStore { return store.NewMemoryStore() }},
	{"sqlite", func(t testing.TB) store.ApprovalStore {
		s, err := store.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t testing.TB) store.ApprovalStore { return isolatedPostgres(t)() }},
}

// forEachStore runs test in a parallel subtest per kind of store, each on
// a fresh store.
func forEachStore(t *testing.T, test func(t *testing.T, st store.ApprovalStore)) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			test(t, kind.open(t))
		})
	}
}

// isolatedPostgres returns an opener of stores on a schema of the test's
// own in the test database (dropped when it ends); without the database it
// skips, or fails under CI (internal/testkit/pgtest).
func isolatedPostgres(t testing.TB) func() *store.PostgresStore {
	t.Helper()
	dsn := pgtest.Schema(t, "approvals_test")
	return func() *store.PostgresStore {
		s, err := store.OpenPostgres(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// TestApprovalLifecycle runs docs/contract.md §13's rows over a go-sdk client on HTTP,
// for every store.
func TestApprovalLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.ApprovalStore) {
		e := newEnv(t, st)
		as := e.connect(t, alice, nil)

		// Held; the same id while pending; the method never ran.
		text, isErr := call(t, as, "wipe", "db1")
		require.True(t, isErr)
		id := heldID(t, text)
		text, _ = call(t, as, "wipe", "db1")
		assert.Equal(t, id, heldID(t, text), "the same request while pending")
		assert.Zero(t, e.ran("db1"))

		// Other arguments are held anew.
		other := hold(t, as, "db2")
		assert.NotEqual(t, id, other)

		// The approver lists it with its arguments; the requester does
		// not see it among those she may decide.
		code, body := e.do(t, bob, "GET", "/approvals", "")
		require.Equal(t, http.StatusOK, code, body)
		var list struct {
			Approvals []approvals.Request `json:"approvals"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		require.Len(t, list.Approvals, 2)
		first := list.Approvals[0]
		if first.ID != id {
			first = list.Approvals[1]
		}
		require.Equal(t, id, first.ID)
		assert.JSONEq(t, `{"target":"db1"}`, string(first.Arguments))
		assert.Equal(t, "alice", first.Subject)
		assert.Equal(t, []string{"admin"}, first.Approvers)
		_, body = e.do(t, alice, "GET", "/approvals", "")
		assert.JSONEq(t, `{"approvals":[]}`, body)

		// Approve: the identical call runs once, the next is held anew.
		code, body = e.do(t, bob, "POST", "/approvals/"+id+"/approve", `{"note":"ok for today"}`)
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, `"status":"approved"`)
		text, isErr = call(t, as, "wipe", "db1")
		assert.False(t, isErr, text)
		assert.Equal(t, "ran db1", text)
		assert.Equal(t, 1, e.ran("db1"))
		text, _ = call(t, as, "wipe", "db1")
		assert.NotEqual(t, id, heldID(t, text), "an approval is used once")
		assert.Equal(t, 1, e.ran("db1"))

		// Deciding twice: 409.
		code, _ = e.do(t, bob, "POST", "/approvals/"+id+"/approve", "")
		assert.Equal(t, http.StatusConflict, code)

		// Audit: held, then the run with approval_id and approved_by;
		// never the arguments.
		recs, trail := e.auditTrail(t)
		var held, consumed int
		for _, r := range recs {
			switch {
			case r.Outcome == "held":
				held++
			case r.Outcome == "result" && r.ApprovalID == id:
				consumed++
				assert.Equal(t, "bob", r.ApprovedBy)
			}
		}
		assert.Equal(t, 4, held)
		assert.Equal(t, 1, consumed)
		assert.NotContains(t, trail, "target", "no argument (name or value) in the audit trail")
	})
}

func TestApprovalRefusedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.NewMemoryStore())
	as := e.connect(t, alice, nil)
	id := hold(t, as, "db1")
	code, body := e.do(t, bob, "POST", "/approvals/"+id+"/refuse", `{"note":"no"}`)
	require.Equal(t, http.StatusOK, code, body)
	text, isErr := call(t, as, "wipe", "db1")
	assert.True(t, isErr)
	assert.Equal(t, "Approval "+id+" was refused.", text)
	text, _ = call(t, as, "wipe", "db1")
	assert.NotEqual(t, id, heldID(t, text), "the call after the refusal opens a new request")
	assert.Zero(t, e.ran("db1"))
}

func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.NewMemoryStore())
	as := e.connect(t, alice, nil)

	// An undecided request expires after the ttl (10m): a new one opens.
	id := hold(t, as, "db1")
	e.clock.Advance(10*time.Minute + time.Second)
	code, _ := e.do(t, bob, "POST", "/approvals/"+id+"/approve", "")
	assert.Equal(t, http.StatusConflict, code, "an expired request cannot be approved")
	id2 := hold(t, as, "db1")
	assert.NotEqual(t, id, id2)

	// An unused approval expires after the ttl from its decision.
	code, _ = e.do(t, bob, "POST", "/approvals/"+id2+"/approve", "")
	require.Equal(t, http.StatusOK, code)
	e.clock.Advance(10*time.Minute + time.Second)
	assert.NotEqual(t, id2, hold(t, as, "db1"))
	assert.Zero(t, e.ran("db1"))

	// Within the ttl, it runs.
	id3 := hold(t, as, "db2")
	e.clock.Advance(9 * time.Minute)
	code, _ = e.do(t, bob, "POST", "/approvals/"+id3+"/approve", "")
	require.Equal(t, http.StatusOK, code)
	e.clock.Advance(9 * time.Minute)
	text, isErr := call(t, as, "wipe", "db2")
	assert.False(t, isErr, text)
}

func TestApproverRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.NewMemoryStore())
	text, _ := call(t, e.connect(t, selfish, nil), "wipe", "db1")
	id := heldID(t, text)
	for _, tc := range []struct {
		name   string
		caller *toolcall.Caller
		path   string
		body   string
		want   int
	}{
		{"nobody", nil, "/approvals/" + id + "/approve", "", http.StatusUnauthorized},
		{"nobody lists", nil, "/approvals", "", http.StatusUnauthorized},
		{"the requester cannot approve their own request", selfish, "/approvals/" + id + "/approve", "", http.StatusForbidden},
		{"an approver without the role: as for an unknown id", carol, "/approvals/" + id + "/approve", "", http.StatusNotFound},
		{"refusing without the role: as for an unknown id", carol, "/approvals/" + id + "/refuse", "", http.StatusNotFound},
		{"an unknown id", bob, "/approvals/0123456789abcdef01234567/approve", "", http.StatusNotFound},
		{"a body that is not JSON", bob, "/approvals/" + id + "/approve", "note", http.StatusBadRequest},
		{"a body too large", bob, "/approvals/" + id + "/approve", `{"note":"` + strings.Repeat("x", 9000) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		method := "POST"
		if tc.path == "/approvals" {
			method = "GET"
		}
		code, body := e.do(t, tc.caller, method, tc.path, tc.body)
		assert.Equal(t, tc.want, code, "%s: %s", tc.name, body)
	}
	// An unknown token: 401.
	req, _ := http.NewRequest("GET", e.url+"/approvals", nil)
	req.Header.Set("Authorization", "Bearer nope")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	// Still pending: bob approves.
	code, _ := e.do(t, bob, "POST", "/approvals/"+id+"/approve", "")
	assert.Equal(t, http.StatusOK, code)
}

// TestHiddenToolNeverHeld: the approval rule is asked only for granted
// tools, so a hidden tool answers exactly like a name no row has and no
// request is recorded.
func TestHiddenToolNeverHeld(t *testing.T) {
	t.Parallel()
	st := store.NewMemoryStore()
	e := newEnv(t, st)
	as := e.connect(t, alice, nil)
	text, isErr := call(t, as, "secret", "x")
	assert.True(t, isErr)
	assert.Equal(t, "Error: Unknown tool 'secret'.", text)
	text2, _ := call(t, as, "nosuchtool", "x")
	assert.Equal(t, "Error: Unknown tool 'nosuchtool'.", text2)
	pending, err := st.PendingApprovals(context.Background(), e.clock.Now(), store.PendingQuery{Roles: []string{"admin"}, Limit: 100})
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// TestConcurrentConsumption: 20 identical calls racing after one approval:
// the method runs once, for every store.
func TestConcurrentConsumption(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.ApprovalStore) {
		e := newEnv(t, st)
		as := e.connect(t, alice, nil)
		id := hold(t, as, "db1")
		code, _ := e.do(t, bob, "POST", "/approvals/"+id+"/approve", "")
		require.Equal(t, http.StatusOK, code)

		const n = 20
		sessions := make([]*mcp.ClientSession, n)
		for i := range sessions {
			sessions[i] = e.connect(t, alice, nil)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		ran := make(chan string, n)
		for _, cs := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wipe", Arguments: map[string]any{"target": "db1"}})
				if err == nil && !res.IsError {
					ran <- res.Content[0].(*mcp.TextContent).Text
				}
			}()
		}
		close(start)
		wg.Wait()
		close(ran)
		assert.Len(t, ran, 1)
		assert.Equal(t, 1, e.ran("db1"))
	})
}
