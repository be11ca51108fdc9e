package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// TestPendingCapPerRequester: a requester with MaxPending requests
// pending is answered TooManyPending and no request is recorded; another
// requester is not affected; once one is decided there is room again.
func TestPendingCapPerRequester(t *testing.T) {
	t.Parallel()
	e := newEnvOptions(t, store.NewMemoryStore(), testPolicy, approvals.Options{Settings: approvals.Settings{MaxPending: 3}})
	as := e.connect(t, alice, nil)
	var ids []string
	for i := range 3 {
		text, _ := call(t, as, "wipe", fmt.Sprint("db", i))
		ids = append(ids, heldID(t, text))
	}
	text, isErr := call(t, as, "wipe", "db3")
	assert.True(t, isErr)
	assert.Equal(t, "Too many approval requests of yours are pending (at most 3). Call again once one is decided or expired.", text)
	assert.Equal(t, approvals.TooManyPending(3), text)
	// The same call as a pending one still answers its request.
	text, _ = call(t, as, "wipe", "db0")
	assert.Equal(t, ids[0], heldID(t, text))

	text, _ = call(t, e.connect(t, selfish, nil), "wipe", "db3")
	heldID(t, text) // another requester has room

	code, body := e.do(t, bob, "POST", "/approvals/"+ids[1]+"/refuse", "")
	require.Equal(t, http.StatusOK, code, body)
	text, _ = call(t, as, "wipe", "db3")
	heldID(t, text)
}

// TestArgumentsTooLargeToHold: a call needing an approval whose
// arguments are larger than MaxArgumentBytes is refused with
// ArgumentsTooLarge; nothing is recorded. Smaller ones are held.
func TestArgumentsTooLargeToHold(t *testing.T) {
	t.Parallel()
	st := store.NewMemoryStore()
	e := newEnvOptions(t, st, testPolicy, approvals.Options{MaxArgumentBytes: 100})
	as := e.connect(t, alice, nil)
	text, isErr := call(t, as, "wipe", strings.Repeat("x", 100))
	assert.True(t, isErr)
	assert.Equal(t, "The arguments are too large to hold for approval (at most 100 bytes).", text)
	pending, err := st.PendingApprovals(context.Background(), e.clock.Now(), store.PendingQuery{Roles: []string{"admin"}, Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, pending)
	text, _ = call(t, as, "wipe", strings.Repeat("x", 50))
	heldID(t, text)
}

// TestListingSelectsByRoleInTheStore: 1 500 requests for one approver
// role do not hide a later request for another from its approvers: the
// store selects by role, and pages walk the whole listing in order.
func TestListingSelectsByRoleInTheStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.ApprovalStore) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		add := func(i int, role string) string {
			id := fmt.Sprintf("%s-%05d", role, i)
			ok, err := st.CreateApproval(ctx, store.ApprovalRecord{ID: id,
				Key:       store.ApprovalKey{Source: "token", Subject: "mallory", Tool: "wipe", ArgsHash: id},
				Arguments: json.RawMessage(`{}`), Reason: "r", Approvers: []string{role}, TTL: time.Hour,
				Status: store.ApprovalPending, Created: now.Add(time.Duration(i) * time.Millisecond), Expires: now.Add(time.Hour)})
			require.NoError(t, err)
			require.True(t, ok)
			return id
		}
		for i := range 1500 {
			add(i, "ops")
		}
		wanted := add(1500, "admin")
		g := approvals.New(st, approvals.Options{Now: func() time.Time { return now }})
		admin := &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}
		list, err := g.Pending(ctx, admin)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, wanted, list[0].ID)

		// An ops approver pages through all 1 500, oldest first.
		ops := &toolcall.Caller{Subject: "otto", Roles: []string{"ops"}}
		var seen []string
		after := ""
		for {
			page, next, err := g.PendingPage(ctx, ops, after, 400)
			require.NoError(t, err)
			for _, r := range page {
				seen = append(seen, r.ID)
			}
			if next == "" {
				break
			}
			after = next
		}
		require.Len(t, seen, 1500)
		assert.Equal(t, "ops-00000", seen[0])
		assert.Equal(t, "ops-01499", seen[1499])
		for i := 1; i < len(seen); i++ {
			require.Less(t, seen[i-1], seen[i])
		}

		all, err := g.AllPending(ctx, ops)
		require.NoError(t, err)
		assert.Len(t, all, 1500, "`toolgate approvals list` reads every page")

		// The requester never sees their own.
		list, err = g.Pending(ctx, &toolcall.Caller{Subject: "mallory", Roles: []string{"admin", "ops"}})
		require.NoError(t, err)
		assert.Empty(t, list)
		n, err := st.CountPending(ctx, "token", "mallory", now)
		require.NoError(t, err)
		assert.Equal(t, 1501, n)
		n, err = st.CountPending(ctx, "jwt", "mallory", now)
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

// TestListingPagesOverHTTP: GET /approvals takes limit and after and
// answers next until the last page; a bad cursor or limit is 400.
func TestListingPagesOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.NewMemoryStore())
	as := e.connect(t, alice, nil)
	for i := range 5 {
		text, _ := call(t, as, "wipe", fmt.Sprint("db", i))
		heldID(t, text)
		e.clock.Advance(time.Millisecond)
	}
	var page struct {
		Approvals []approvals.Request `json:"approvals"`
		Next      string              `json:"next"`
	}
	var targets []string
	path := "/approvals?limit=2"
	for range 5 {
		code, body := e.do(t, bob, "GET", path, "")
		require.Equal(t, http.StatusOK, code, body)
		page.Next = ""
		require.NoError(t, json.Unmarshal([]byte(body), &page))
		for _, r := range page.Approvals {
			targets = append(targets, string(r.Arguments))
		}
		if page.Next == "" {
			break
		}
		path = "/approvals?limit=2&after=" + page.Next
	}
	assert.Equal(t, []string{`{"target":"db0"}`, `{"target":"db1"}`, `{"target":"db2"}`, `{"target":"db3"}`, `{"target":"db4"}`}, targets)
	for _, bad := range []string{"/approvals?after=nope", "/approvals?limit=0", "/approvals?limit=1001"} {
		code, _ := e.do(t, bob, "GET", bad, "")
		assert.Equal(t, http.StatusBadRequest, code, bad)
	}
}

// TestApprovalsKeyedBySource: the tokens file's "root" and the issuer's
// "root" are two requesters: an approval of one's call is not consumed
// by the other's identical call, which is held apart.
func TestApprovalsKeyedBySource(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.ApprovalStore) {
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		g := approvals.New(st, approvals.Options{Now: func() time.Time { return now }})
		ctx := context.Background()
		rule := &engine.Approval{Reason: "r", Approvers: []string{"admin"}, TTL: time.Hour}
		root := &toolcall.Caller{Subject: "root", Roles: []string{"ops"}}
		callAs := func(source string) *hooks.CallContext {
			return &hooks.CallContext{Name: "wipe", Tool: &registry.Tool{Name: "wipe"}, Arguments: json.RawMessage(`{"target":"prod"}`),
				Caller: root, Source: source}
		}
		ck, err := g.Check(ctx, callAs("token"), rule)
		require.NoError(t, err)
		require.Equal(t, mcpadapter.ApprovalHeld, ck.State)
		_, err = g.Decide(ctx, &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}, ck.ID, true, "")
		require.NoError(t, err)

		other, err := g.Check(ctx, callAs("jwt"), rule)
		require.NoError(t, err)
		assert.Equal(t, mcpadapter.ApprovalHeld, other.State, "the issuer's root does not consume the tokens file's root's approval")
		assert.NotEqual(t, ck.ID, other.ID)

		mine, err := g.Check(ctx, callAs("token"), rule)
		require.NoError(t, err)
		assert.Equal(t, mcpadapter.ApprovalConsumed, mine.State)
		assert.Equal(t, ck.ID, mine.ID)

		r, err := g.Decide(ctx, &toolcall.Caller{Subject: "ann", Roles: []string{"admin"}}, other.ID, false, "")
		require.NoError(t, err)
		assert.Equal(t, "jwt", r.Source)
	})
}

// TestDecidingAnIDOneMayNotSeeIsNotFound: a caller who is neither an
// approver of the request nor its requester gets the answer of an
// unknown id, so ids cannot be probed; the requester, who knows the id,
// is told they may not decide it.
func TestDecidingAnIDOneMayNotSeeIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.NewMemoryStore())
	text, _ := call(t, e.connect(t, alice, nil), "wipe", "db1")
	id := heldID(t, text)
	code, unknown := e.do(t, carol, "POST", "/approvals/0123456789abcdef01234567/approve", "")
	require.Equal(t, http.StatusNotFound, code)
	code, body := e.do(t, carol, "POST", "/approvals/"+id+"/approve", "")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, unknown, body, "the same answer as for an unknown id")
	code, _ = e.do(t, alice, "POST", "/approvals/"+id+"/approve", "")
	assert.Equal(t, http.StatusForbidden, code)
}
