package approvals

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
)

// Errors of Decide, for errors.Is. The HTTP endpoints map them to 404,
// 403 and 409.
var (
	// ErrNotFound: no request has the id (or it was pruned).
	ErrNotFound = errors.New("approvals: no such approval request")
	// ErrForbidden: the caller may not decide the request: nobody, the
	// requester, or a caller without one of its approver roles.
	ErrForbidden = errors.New("approvals: the caller may not decide this request")
	// ErrNotPending: the request was already decided, or expired.
	ErrNotPending = errors.New("approvals: the request is not pending")
)

// MaxNoteBytes bounds the note an approver gives.
const MaxNoteBytes = 1024

// MayDecide reports whether caller may approve or refuse r: a signed-in
// caller with one of its approver roles and a subject other than the
// requester's.
func MayDecide(caller *engine.Caller, r *Request) bool {
	if caller == nil || caller.Subject == "" || caller.Subject == r.Subject {
		return false
	}
	for _, role := range caller.Roles {
		if slices.Contains(r.Approvers, role) {
			return true
		}
	}
	return false
}

// Pending returns the pending requests caller may decide, oldest first
// (at most DefaultListLimit looked at).
func (g *Gate) Pending(ctx context.Context, caller *engine.Caller) ([]Request, error) {
	recs, err := g.store.PendingApprovals(ctx, g.opts.Now(), DefaultListLimit)
	if err != nil {
		return nil, err
	}
	out := []Request{}
	for i := range recs {
		r := requestOf(&recs[i])
		if MayDecide(caller, &r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Decide approves (approve true) or refuses the pending request id on
// behalf of caller, with an optional note, and returns the request as
// decided. Errors: ErrNotFound, ErrForbidden, ErrNotPending, or the
// store's.
func (g *Gate) Decide(ctx context.Context, caller *engine.Caller, id string, approve bool, note string) (Request, error) {
	if len(note) > MaxNoteBytes {
		note = strings.ToValidUTF8(note[:MaxNoteBytes], "")
	}
	rec, err := g.store.ApprovalByID(ctx, id)
	if errors.Is(err, ledger.ErrApprovalNotFound) {
		return Request{}, ErrNotFound
	}
	if err != nil {
		return Request{}, err
	}
	r := requestOf(&rec)
	if !MayDecide(caller, &r) {
		return r, ErrForbidden
	}
	now := g.opts.Now()
	if rec.Status != ledger.ApprovalPending {
		return r, ErrNotPending
	}
	if now.After(rec.Expires) {
		if err := g.expire(ctx, rec); err != nil {
			return r, err
		}
		return r, ErrNotPending
	}
	to := rec
	to.Status, to.DecidedBy, to.DecidedAt, to.Note = ledger.ApprovalRefused, caller.Subject, now, note
	state := StateRefused
	if approve {
		to.Status, state = ledger.ApprovalApproved, StateApproved
	}
	// An approval lasts its ttl from the decision; a refusal is answered
	// once within the same time.
	to.Expires = now.Add(rec.TTL)
	ok, err := g.store.TransitionApproval(ctx, ledger.ApprovalPending, to)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, ErrNotPending
	}
	g.state(state)
	g.log.Info("approvals: request decided", slog.String("approval_id", id), slog.String("decision", string(to.Status)),
		slog.String("by", caller.Subject), slog.String("requester", rec.Key.Subject), slog.String("tool", rec.Key.Tool))
	return requestOf(&to), nil
}
