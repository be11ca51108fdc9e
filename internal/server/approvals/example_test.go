package approvals_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// A call held for approval, approved by another person, then run once.
// In a server the adapter asks Check (mcpadapter.Options.Approvals) for
// every granted call that an approval rule names.
func ExampleGate() {
	ctx := context.Background()
	n := 0
	gate := approvals.New(store.NewMemoryStore(), approvals.Options{
		NewID: func() string { n++; return fmt.Sprintf("req-%d", n) },
	})
	rule := &engine.Approval{Reason: "wiping needs an admin", Approvers: []string{"admin"}, TTL: engine.DefaultApprovalTTL}
	call := &hooks.CallContext{
		Name: "wipe", Tool: &registry.Tool{Name: "wipe"}, Arguments: json.RawMessage(`{"target":"db1"}`),
		Caller: &toolcall.Caller{Subject: "alice", Roles: []string{"contractor"}},
	}

	ck, _ := gate.Check(ctx, call, rule)
	fmt.Println(mcpadapter.ApprovalRequired(rule.Reason, ck.ID))

	_, err := gate.Decide(ctx, call.Caller, ck.ID, true, "")
	fmt.Println(err) // the requester cannot approve her own call
	r, _ := gate.Decide(ctx, &toolcall.Caller{Subject: "bob", Roles: []string{"admin"}}, ck.ID, true, "ok")
	fmt.Println(r.Status, r.DecidedBy)

	ck, _ = gate.Check(ctx, call, rule)
	fmt.Println(ck.State == mcpadapter.ApprovalConsumed, ck.ApprovedBy)
	ck, _ = gate.Check(ctx, call, rule)
	fmt.Println(ck.State == mcpadapter.ApprovalHeld, ck.ID)
	// Output:
	// Approval required: wiping needs an admin (approval req-1). Call again once it is approved.
	// approvals: the caller may not decide this request
	// approved bob
	// true bob
	// true req-2
}
