package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
)

// The exact answers of SPEC §13.
const (
	// MsgNotConfirmed answers a call whose confirmation the user declined
	// or cancelled.
	MsgNotConfirmed = "The call was not confirmed."
	// MsgCannotConfirm answers a call that needs a confirmation from a
	// client without the elicitation capability.
	MsgCannotConfirm = "This tool needs a confirmation your client cannot show."
)

// ApprovalRequired is the answer to a call held for an approval.
func ApprovalRequired(reason, id string) string {
	return fmt.Sprintf("Approval required: %s (approval %s). Call again once it is approved.", reason, id)
}

// ApprovalRefused is the answer, given once, to the call whose request an
// approver refused.
func ApprovalRefused(id string) string { return fmt.Sprintf("Approval %s was refused.", id) }

// Approvals holds the calls that data.toolgate.call.approval names until a
// person approves them (SPEC §13); hooks/approvals.Gate is one. The adapter
// asks it only for a granted call that nothing refused.
type Approvals interface {
	// Check decides a call that needs approval under rule: an approval
	// for it is consumed (the call runs), or the call is held (a request
	// is recorded, or the pending one found), or its refused request is
	// answered. An error fails the call closed.
	Check(ctx context.Context, call *CallContext, rule *engine.Approval) (ApprovalCheck, error)
}

// ApprovalState is what Approvals.Check found.
type ApprovalState int

const (
	// ApprovalHeld: the request ID is pending; the call does not run.
	ApprovalHeld ApprovalState = iota + 1
	// ApprovalConsumed: the approval ID was consumed by this call; it runs.
	ApprovalConsumed
	// ApprovalRefusedOnce: the request ID was refused; this call is told
	// so, the next one opens a new request.
	ApprovalRefusedOnce
)

// ApprovalCheck is the answer of Approvals.Check.
type ApprovalCheck struct {
	State ApprovalState
	// ID is the request's id.
	ID string
	// ApprovedBy is the approver's subject (ApprovalConsumed).
	ApprovedBy string
}

// ErrNoApprovals fails a call that an approval rule holds on a server
// without an approval store.
var ErrNoApprovals = errors.New("an approval rule holds the call but the server has no approval store")

// checkApproval runs the approval step of step 5; nil when the call goes on.
func (a *Adapter) checkApproval(ctx context.Context, call *CallContext, rule *engine.Approval, end *CallEnd) *CallEnd {
	if a.opts.Approvals == nil {
		return &CallEnd{Outcome: OutcomeFailed, Result: TextResult(msgInternal, true), Err: ErrNoApprovals, Failed: true}
	}
	var ck ApprovalCheck
	err := a.guard(ctx, false, func(ctx context.Context) error {
		var err error
		ck, err = a.opts.Approvals.Check(ctx, call, rule)
		return err
	})
	if err == nil && ck.ID == "" {
		err = errors.New("approval check returned no id")
	}
	if err != nil {
		return &CallEnd{Outcome: OutcomeFailed, Result: TextResult(msgInternal, true), Err: fmt.Errorf("approvals: %w", err), Failed: true}
	}
	switch ck.State {
	case ApprovalConsumed:
		end.ApprovalID, end.ApprovedBy = ck.ID, ck.ApprovedBy
		return nil
	case ApprovalHeld:
		text := ApprovalRequired(rule.Reason, ck.ID)
		return &CallEnd{Outcome: OutcomeHeld, Result: TextResult(text, true), Reasons: []string{text}, AnsweredBy: "policy", ApprovalID: ck.ID}
	case ApprovalRefusedOnce:
		text := ApprovalRefused(ck.ID)
		return &CallEnd{Outcome: OutcomeDenied, Result: TextResult(text, true), Reasons: []string{text}, AnsweredBy: "approval", ApprovalID: ck.ID}
	}
	return &CallEnd{Outcome: OutcomeFailed, Result: TextResult(msgInternal, true), Err: fmt.Errorf("approvals: unknown state %d", ck.State), Failed: true}
}

// confirmSchema is the yes/no form of a confirmation.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"confirm": map[string]any{"type": "boolean", "title": "Confirm", "description": "Run this call"},
	},
	"required": []string{"confirm"},
}

// confirmInputID names the confirmation among a call's input requests
// (multi round-trip, SEP-2322).
const confirmInputID = "toolgate.confirm"

// multiRoundTripRevision is the first protocol revision whose clients get
// input requests in the result instead of elicitation/create requests.
const multiRoundTripRevision = "2026-07-28"

// confirm asks the calling user, through MCP elicitation, the question of
// data.toolgate.call.confirm; nil when the user accepted with yes.
//
// A client of the 2026-07-28 revision gets the question as an input
// request of the result (resultType input_required) and calls again with
// the answer in inputResponses; an older one gets an elicitation/create
// request while the call waits. The answer is the client's either way: a
// confirmation protects the user from their agent's mistakes, it is not an
// approval (SPEC §13's approvals are the server's).
func (a *Adapter) confirm(ctx context.Context, req *mcp.CallToolRequest, question string) *CallEnd {
	no := func(text string) *CallEnd {
		return &CallEnd{Outcome: OutcomeDenied, Result: TextResult(text, true), Reasons: []string{text}, AnsweredBy: "confirmation"}
	}
	answered := func(res *mcp.ElicitResult) *CallEnd {
		if res == nil || res.Action != "accept" {
			return no(MsgNotConfirmed)
		}
		if yes, _ := res.Content["confirm"].(bool); !yes {
			return no(MsgNotConfirmed)
		}
		return nil
	}
	if req != nil && req.Params != nil {
		if r, ok := req.Params.InputResponses[confirmInputID]; ok {
			res, _ := r.(*mcp.ElicitResult)
			return answered(res)
		}
	}
	var ss *mcp.ServerSession
	if req != nil {
		ss = req.Session
	}
	if ss == nil {
		return no(MsgCannotConfirm)
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return no(MsgCannotConfirm)
	}
	if el := ip.Capabilities.Elicitation; el.Form == nil && el.URL != nil {
		return no(MsgCannotConfirm) // URL elicitation only: no form to show
	}
	params := &mcp.ElicitParams{Mode: "form", Message: question, RequestedSchema: confirmSchema}
	if ip.ProtocolVersion >= multiRoundTripRevision {
		res := &mcp.CallToolResult{Content: []mcp.Content{}, InputRequests: mcp.InputRequestMap{confirmInputID: params}}
		return &CallEnd{Outcome: OutcomeAnswered, Result: res, AnsweredBy: "confirmation"}
	}
	res, err := ss.Elicit(ctx, params)
	if err != nil {
		return &CallEnd{Outcome: OutcomeFailed, Result: TextResult(msgInternal, true), Err: fmt.Errorf("confirmation: %w", err), Failed: true}
	}
	return answered(res)
}

// inputRequired is a tools/call result that asks the client for input
// (SEP-2322): the SDK sets resultType only on results of its own tool
// handlers, which the adapter's middleware answers before.
type inputRequired struct{ *mcp.CallToolResult }

func (r inputRequired) MarshalJSON() ([]byte, error) {
	b, err := r.CallToolResult.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["resultType"] = json.RawMessage(`"input_required"`)
	return json.Marshal(m)
}

// asResult is what the middleware returns for a call's result.
func asResult(res *mcp.CallToolResult) mcp.Result {
	if res != nil && res.InputRequests != nil {
		return inputRequired{res}
	}
	return res
}
