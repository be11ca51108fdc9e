package mcpadapter

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/toolcall"
)

// Approvals holds the calls that data.toolgate.call.approval names until a
// person approves them (docs/contract.md §13); hooks/approvals.Gate is one. The adapter
// asks it only for a granted call that nothing refused.
type Approvals interface {
	// Check decides a call that needs approval under rule: an approval
	// for it is consumed (the call runs), or the call is held (a request
	// is recorded, or the pending one found), or its refused request is
	// answered. An error fails the call closed.
	Check(ctx context.Context, call *hooks.CallContext, rule *engine.Approval) (ApprovalCheck, error)
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
	// ApprovalNotRecorded: no request could be recorded for the call (too
	// many pending, arguments too large to keep); it is answered
	// ApprovalCheck.Message, and has no ID.
	ApprovalNotRecorded
)

// ApprovalCheck is the answer of Approvals.Check.
type ApprovalCheck struct {
	State ApprovalState
	// ID is the request's id.
	ID string
	// ApprovedBy is the approver's subject (ApprovalConsumed).
	ApprovedBy string
	// Message is the answer of ApprovalNotRecorded.
	Message string
}

// ErrNoApprovals fails a call that an approval rule holds on a server
// without an approval store.
var ErrNoApprovals = errors.New("an approval rule holds the call but the server has no approval store")

// checkApproval runs the approval step of step 5 for a served call; it
// reports whether that decided the call (held, refused, failed). A call
// that consumed an approval goes on, the approval in rec.
func (a *Adapter) checkApproval(ctx context.Context, call *hooks.CallContext, rule *engine.Approval, rec *hooks.Record) bool {
	by := hooks.Answerer{Kind: toolcall.ByApproval, Rules: rule.Rules}
	if a.opts.Approvals == nil {
		fail(rec, toolcall.StageHookFailed, by, ErrNoApprovals)
		return true
	}
	ck, err := guard(ctx, a.opts.HookTimeout, false, func(ctx context.Context) (ApprovalCheck, error) {
		return a.opts.Approvals.Check(ctx, call, rule)
	})
	if err == nil && ck.State == ApprovalNotRecorded {
		if ck.Message == "" {
			err = errors.New("approval check refused without a message")
		}
	} else if err == nil && ck.ID == "" {
		err = errors.New("approval check returned no id")
	}
	if err != nil {
		fail(rec, toolcall.StageHookFailed, by, fmt.Errorf("approvals: %w", err))
		return true
	}
	switch ck.State {
	case ApprovalConsumed:
		rec.ApprovalID, rec.ApprovedBy = ck.ID, ck.ApprovedBy
		return false
	case ApprovalHeld:
		held(rec, rule, ck.ID)
		return true
	case ApprovalNotRecorded:
		rec.Stage, rec.Outcome, rec.Answerer, rec.Result = toolcall.StageDenied, toolcall.OutcomeDenied, by, TextResult(ck.Message, true)
		return true
	case ApprovalRefusedOnce:
		text := ApprovalRefused(ck.ID)
		rec.Stage, rec.Outcome, rec.Answerer = toolcall.StageDenied, toolcall.OutcomeDenied, by
		rec.Result, rec.ApprovalID = TextResult(text, true), ck.ID
		return true
	}
	fail(rec, toolcall.StageHookFailed, by, fmt.Errorf("approvals: unknown state %d", ck.State))
	return true
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
// data.toolgate.call.confirm, for a served call; it reports whether that
// decided the call (false: the user accepted with yes).
//
// A client of the 2026-07-28 revision gets the question as an input
// request of the result (resultType input_required) and calls again with
// the answer in inputResponses; an older one gets an elicitation/create
// request while the call waits. The answer is the client's either way: a
// confirmation protects the user from their agent's mistakes, it is not an
// approval (docs/contract.md §13's approvals are the server's).
//
// An answer in inputResponses counts only with the requestState the
// adapter gave when it asked, for this caller (source and subject), tool
// and arguments, within confirmStateTTL: an answer the server did not ask
// for (a client that sends one up front, or replays one for other
// arguments) is ignored and the question asked.
func (a *Adapter) confirm(ctx context.Context, req *mcp.CallToolRequest, call *hooks.CallContext, question string, rec *hooks.Record) bool {
	by := hooks.Answerer{Kind: toolcall.ByConfirmation, Rules: rec.CallDecision.ConfirmRules}
	no := func(text string) bool {
		rec.Stage, rec.Outcome, rec.Answerer, rec.Result = toolcall.StageDenied, toolcall.OutcomeDenied, by, TextResult(text, true)
		return true
	}
	answered := func(res *mcp.ElicitResult) bool {
		if res == nil || res.Action != "accept" {
			return no(MsgNotConfirmed)
		}
		if yes, _ := res.Content["confirm"].(bool); !yes {
			return no(MsgNotConfirmed)
		}
		return false
	}
	if req != nil && req.Params != nil {
		if r, ok := req.Params.InputResponses[confirmInputID]; ok {
			if a.confirmAsked(req.Params.RequestState, call, question) {
				res, _ := r.(*mcp.ElicitResult)
				return answered(res)
			}
			a.log.Info("mcpadapter: ignored a confirmation answer the server did not ask for", slog.String("decision_id", call.DecisionID))
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
		res := &mcp.CallToolResult{Content: []mcp.Content{}, InputRequests: mcp.InputRequestMap{confirmInputID: params},
			RequestState: a.confirmState(call, question, time.Now().Add(confirmStateTTL))}
		rec.Stage, rec.Outcome, rec.Answerer, rec.Result = toolcall.StageAnswered, toolcall.OutcomeAnswered, by, res
		return true
	}
	res, err := ss.Elicit(ctx, params)
	if err != nil {
		fail(rec, toolcall.StageHookFailed, by, fmt.Errorf("confirmation: %w", err))
		return true
	}
	return answered(res)
}

// confirmStateTTL is how long an answer to a confirmation may take.
const confirmStateTTL = 10 * time.Minute

// confirmState is the requestState of a confirmation asked of call:
// when it expires and a MAC, under the adapter's key, of that and what
// it was asked for.
func (a *Adapter) confirmState(call *hooks.CallContext, question string, expires time.Time) string {
	var b [8 + sha256.Size]byte
	binary.BigEndian.PutUint64(b[:8], uint64(expires.Unix()))
	copy(b[8:], a.confirmMAC(call, question, b[:8]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// confirmAsked reports whether state is one confirmState gave for call
// (same caller, tool, arguments and question) that has not expired.
func (a *Adapter) confirmAsked(state string, call *hooks.CallContext, question string) bool {
	b, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(b) != 8+sha256.Size {
		return false
	}
	if time.Now().Unix() > int64(binary.BigEndian.Uint64(b[:8])) {
		return false
	}
	return hmac.Equal(b[8:], a.confirmMAC(call, question, b[:8]))
}

func (a *Adapter) confirmMAC(call *hooks.CallContext, question string, expires []byte) []byte {
	m := hmac.New(sha256.New, a.confirmKey[:])
	subject := ""
	if call.Caller != nil {
		subject = call.Caller.Subject
	}
	// Length-prefixed fields: no two calls write the same bytes.
	for _, f := range []string{"toolgate.confirm", call.Source, subject, call.Name, canon.SHA256(call.Arguments), question} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	m.Write(expires)
	return m.Sum(nil)
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
	return jsonx.Marshal(m)
}

// asResult is what the middleware returns for a call's result.
func asResult(res *mcp.CallToolResult) mcp.Result {
	if res != nil && res.InputRequests != nil {
		return inputRequired{res}
	}
	return res
}
