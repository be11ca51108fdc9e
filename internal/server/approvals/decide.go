package approvals

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// Errors of Decide, for errors.Is. The HTTP endpoints map them to 404,
// 403 and 409.
var (
	// ErrNotFound: no request has the id (or it was pruned), or the
	// caller is not one who may see it: neither an approver nor the
	// requester (so an answer never tells whether an id exists).
	ErrNotFound = errors.New("approvals: no such approval request")
	// ErrForbidden: the requester (who knows the id) may not decide
	// their own request; nobody may decide none.
	ErrForbidden = errors.New("approvals: the caller may not decide this request")
	// ErrNotPending: the request was already decided, or expired.
	ErrNotPending = errors.New("approvals: the request is not pending")
)

// MaxNoteBytes bounds the note an approver gives.
const MaxNoteBytes = 1024

// MayDecide reports whether caller may approve or refuse r: a signed-in
// caller with one of its approver roles and a subject other than the
// requester's.
func MayDecide(caller *toolcall.Caller, r *Request) bool {
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

// Pending returns the first page (DefaultListLimit) of the pending
// requests caller may decide, oldest first.
func (g *Gate) Pending(ctx context.Context, caller *toolcall.Caller) ([]Request, error) {
	list, _, err := g.PendingPage(ctx, caller, "", DefaultListLimit)
	return list, err
}

// AllPending returns every pending request caller may decide, oldest
// first, read page by page (`toolgate approvals list`).
func (g *Gate) AllPending(ctx context.Context, caller *toolcall.Caller) ([]Request, error) {
	var all []Request
	after := ""
	for {
		page, next, err := g.PendingPage(ctx, caller, after, MaxListLimit)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		after = next
	}
}

// ErrBadCursor is PendingPage's error for an after it did not make.
var ErrBadCursor = errors.New("approvals: not a cursor of this listing")

// PendingPage returns at most limit (1 to MaxListLimit) pending requests
// caller may decide, oldest first, after the cursor after ("" starts at
// the oldest), and the cursor of the next page ("" at the end). The store
// selects them by the caller's roles, so requests for other approvers
// never crowd a page out.
func (g *Gate) PendingPage(ctx context.Context, caller *toolcall.Caller, after string, limit int) ([]Request, string, error) {
	out := []Request{}
	if caller == nil || caller.Subject == "" || len(caller.Roles) == 0 {
		return out, "", nil
	}
	limit = min(max(limit, 1), MaxListLimit)
	cur, err := parseCursor(after)
	if err != nil {
		return nil, "", err
	}
	recs, err := g.store.PendingApprovals(ctx, g.opts.Now(), store.PendingQuery{Roles: caller.Roles, NotSubject: caller.Subject, After: cur, Limit: limit + 1})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(recs) > limit {
		recs = recs[:limit]
		last := recs[limit-1]
		next = formatCursor(store.Cursor{Created: last.Created, ID: last.ID})
	}
	for i := range recs {
		r := requestOf(&recs[i])
		if MayDecide(caller, &r) {
			out = append(out, r)
		}
	}
	return out, next, nil
}

// A cursor is "NANOS.ID": the creation time (Unix nanoseconds) and id of
// the last request of a page.
func formatCursor(c store.Cursor) string {
	return strconv.FormatInt(c.Created.UnixNano(), 10) + "." + c.ID
}

func parseCursor(s string) (store.Cursor, error) {
	if s == "" {
		return store.Cursor{}, nil
	}
	ns, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" || len(s) > 128 {
		return store.Cursor{}, ErrBadCursor
	}
	return store.Cursor{Created: time.Unix(0, n), ID: id}, nil
}

// Decide approves (approve true) or refuses the pending request id on
// behalf of caller, with an optional note, and returns the request as
// decided. Errors: ErrNotFound, ErrForbidden, ErrNotPending, or the
// store's.
func (g *Gate) Decide(ctx context.Context, caller *toolcall.Caller, id string, approve bool, note string) (Request, error) {
	if len(note) > MaxNoteBytes {
		note = strings.ToValidUTF8(note[:MaxNoteBytes], "")
	}
	rec, err := g.store.ApprovalByID(ctx, id)
	if errors.Is(err, store.ErrApprovalNotFound) {
		return Request{}, ErrNotFound
	}
	if err != nil {
		return Request{}, err
	}
	r := requestOf(&rec)
	if !MayDecide(caller, &r) {
		if caller != nil && caller.Subject != "" && caller.Subject == r.Subject {
			return r, ErrForbidden // the requester knows the id
		}
		return Request{}, ErrNotFound
	}
	now := g.opts.Now()
	if rec.Status != store.ApprovalPending {
		return r, ErrNotPending
	}
	if now.After(rec.Expires) {
		if err := g.expire(ctx, rec); err != nil {
			return r, err
		}
		return r, ErrNotPending
	}
	to := rec
	to.Status, to.DecidedBy, to.DecidedAt, to.Note = store.ApprovalRefused, caller.Subject, now, note
	state := StateRefused
	if approve {
		to.Status, state = store.ApprovalApproved, StateApproved
	}
	// An approval lasts its ttl from the decision; a refusal is answered
	// once within the same time.
	to.Expires = now.Add(rec.TTL)
	ok, err := g.store.TransitionApproval(ctx, store.ApprovalPending, to)
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
