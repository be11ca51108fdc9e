package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ApprovalKey names the call an approval request is for (docs/contract.md §13): the
// requester's identity source and subject, the tool and the SHA-256 of the
// canonical arguments (the audit trail's arguments_sha256). The tokens
// file's "alice" and the issuer's "alice" are two requesters.
type ApprovalKey struct {
	// Source is the requester's identity source (hooks.CallContext.Source);
	// SourceBeforeUpgrade for a request recorded before sources were kept.
	Source   string
	Subject  string
	Tool     string
	ArgsHash string
}

// SourceBeforeUpgrade is the Source of approval requests a store kept
// before requests were keyed by source: no caller's key matches it, so
// such a request is listed and may be decided, but no call consumes it;
// it expires.
const SourceBeforeUpgrade = "unknown"

// PendingQuery selects pending approval requests (PendingApprovals).
type PendingQuery struct {
	// Roles: only requests that name one of these approver roles.
	Roles []string
	// NotSubject: not the requests of this subject (an approver never
	// decides their own), whatever their source.
	NotSubject string
	// After: only requests after this one in the listing's order (oldest
	// first: Created, then ID); the zero Cursor starts at the oldest.
	After Cursor
	// Limit bounds the requests returned (> 0).
	Limit int
}

// Cursor is a place in the listing of pending requests: the last request
// of a page.
type Cursor struct {
	Created time.Time
	ID      string
}

// IsZero reports whether c is the start of the listing.
func (c Cursor) IsZero() bool { return c.ID == "" }

// ApprovalStatus is where an approval request is in its life:
// pending → approved | refused → consumed | closed, or expired.
type ApprovalStatus string

const (
	// ApprovalPending: waiting for an approver, until Expires.
	ApprovalPending ApprovalStatus = "pending"
	// ApprovalApproved: approved, unused until Expires.
	ApprovalApproved ApprovalStatus = "approved"
	// ApprovalRefused: refused; the next identical call is told so.
	ApprovalRefused ApprovalStatus = "refused"
	// ApprovalConsumed: an approved request whose call ran.
	ApprovalConsumed ApprovalStatus = "consumed"
	// ApprovalClosed: a refused request whose refusal was answered.
	ApprovalClosed ApprovalStatus = "closed"
	// ApprovalExpired: pending or approved past its Expires.
	ApprovalExpired ApprovalStatus = "expired"
)

// Live reports whether the status holds its key: at most one request per
// key is pending, approved or refused at a time.
func (s ApprovalStatus) Live() bool {
	return s == ApprovalPending || s == ApprovalApproved || s == ApprovalRefused
}

// ApprovalRecord is one approval request as the store keeps it.
type ApprovalRecord struct {
	ID  string
	Key ApprovalKey
	// Arguments are the call's arguments, shown to approvers (never to the
	// audit trail).
	Arguments json.RawMessage
	Reason    string
	Approvers []string
	TTL       time.Duration
	Status    ApprovalStatus
	Created   time.Time
	// Expires is when a pending request, or an unused approval, expires.
	Expires   time.Time
	DecidedBy string
	DecidedAt time.Time
	Note      string
}

// ErrApprovalNotFound is returned for a request the store does not have.
var ErrApprovalNotFound = errors.New("ledger: approval request not found")

// ApprovalStore keeps approval requests beside the idempotency keys
// (MemoryStore, SQLiteStore and PostgresStore implement it). Each method is
// atomic on its own; hooks/approvals builds the request's life from them.
// Implementations are safe for concurrent use, also from several processes
// where the store is shared.
type ApprovalStore interface {
	// CreateApproval stores rec unless a live request (pending, approved or
	// refused) holds its key: then it stores nothing and returns false. Of
	// concurrent creations for one key at most one returns true.
	CreateApproval(ctx context.Context, rec ApprovalRecord) (bool, error)
	// LiveApproval returns the live request for key, or ErrApprovalNotFound.
	LiveApproval(ctx context.Context, key ApprovalKey) (ApprovalRecord, error)
	// ApprovalByID returns the request id, or ErrApprovalNotFound.
	ApprovalByID(ctx context.Context, id string) (ApprovalRecord, error)
	// PendingApprovals returns the requests pending and not expired at
	// now that q selects, oldest first, at most q.Limit. The store filters
	// (an approver's page is never crowded out by requests for others).
	PendingApprovals(ctx context.Context, now time.Time, q PendingQuery) ([]ApprovalRecord, error)
	// CountPending returns how many requests of source and subject are
	// pending and not expired at now.
	CountPending(ctx context.Context, source, subject string, now time.Time) (int, error)
	// TransitionApproval compare-and-swaps: when request to.ID has status
	// from, it takes to's Status, Expires, DecidedBy, DecidedAt and Note,
	// and TransitionApproval returns true; otherwise nothing changes and
	// it returns false. Of concurrent transitions from one status at most
	// one returns true.
	TransitionApproval(ctx context.Context, from ApprovalStatus, to ApprovalRecord) (bool, error)
	// PruneApprovals removes at most limit requests that expired before
	// before, whatever their status, and returns how many it removed.
	PruneApprovals(ctx context.Context, before time.Time, limit int) (int, error)
}

var (
	_ ApprovalStore = (*MemoryStore)(nil)
	_ ApprovalStore = (*SQLiteStore)(nil)
	_ ApprovalStore = (*PostgresStore)(nil)
)
