package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/mcpadapter"
)

// Defaults of Options.
const (
	// DefaultRetention is how long a request is kept once it expired.
	DefaultRetention = 24 * time.Hour
	// DefaultPruneBatch bounds the requests one prune run removes.
	DefaultPruneBatch = 1000
	// DefaultPruneInterval is how often RunPruner prunes.
	DefaultPruneInterval = time.Minute
	// DefaultListLimit bounds the requests Pending returns.
	DefaultListLimit = 1000
)

// The states counted by Options.OnState (toolgate_approvals_total{state}).
const (
	StateRequested = "requested" // a new request was recorded
	StateApproved  = "approved"  // an approver approved one
	StateRefused   = "refused"   // an approver refused one
	StateConsumed  = "consumed"  // a call consumed an approval and ran
	StateExpired   = "expired"   // a request or an approval expired unused
)

// Options configure a Gate. The zero value takes every default.
type Options struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Retention is how long a request is kept after it expired (for
	// `toolgate approvals` and the HTTP endpoints to tell it apart from an
	// unknown id); DefaultRetention when zero.
	Retention time.Duration
	// Logger receives store failures and decisions; nil discards them.
	Logger *slog.Logger
	// OnState, when set, is called once per state change (the State
	// constants).
	OnState func(state string)
	// OnRequest, when set, is called for each new request, synchronously:
	// it must not block (Webhook.Notify queues).
	OnRequest func(Request)
	// NewID makes the id of a new request; nil: 24 random hex digits.
	// Ids must be unique and unguessable (tests may make them
	// predictable).
	NewID func() string
}

// Gate holds calls for approval in an approval store.
type Gate struct {
	store ledger.ApprovalStore
	opts  Options
	log   *slog.Logger
}

// New returns a Gate over store. It panics when store is nil.
func New(store ledger.ApprovalStore, opts Options) *Gate {
	if store == nil {
		panic("approvals: a store is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.NewID == nil {
		opts.NewID = newID
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Gate{store: store, opts: opts, log: log}
}

var _ mcpadapter.Approvals = (*Gate)(nil)

// Request is an approval request as approvers, the webhook and the
// command line see it.
type Request struct {
	ID      string `json:"id"`
	Subject string `json:"subject"`
	Tool    string `json:"tool"`
	// Arguments are the call's arguments (canonical JSON): approvers
	// decide on them. They are never written to the audit trail, nor sent
	// to the webhook.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsText is Arguments as a person is shown them
	// (ArgumentsText): exact numbers, invisible characters escaped,
	// nothing cut. Pages render it as text; they never re-encode
	// Arguments.
	ArgumentsText string    `json:"arguments_text"`
	Reason        string    `json:"reason"`
	Approvers     []string  `json:"approvers"`
	Status        string    `json:"status"`
	Created       time.Time `json:"created"`
	Expires       time.Time `json:"expires"`
	DecidedBy     string    `json:"decided_by,omitempty"`
	DecidedAt     time.Time `json:"decided_at,omitzero"`
	Note          string    `json:"note,omitempty"`
}

func requestOf(r *ledger.ApprovalRecord) Request {
	return Request{ID: r.ID, Subject: r.Key.Subject, Tool: r.Key.Tool, Arguments: r.Arguments, ArgumentsText: ArgumentsText(r.Arguments), Reason: r.Reason,
		Approvers: r.Approvers, Status: string(r.Status), Created: r.Created.UTC(), Expires: r.Expires.UTC(),
		DecidedBy: r.DecidedBy, DecidedAt: utcOrZero(r.DecidedAt), Note: r.Note}
}

func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// maxRounds bounds the retries of one Check; each lost round means another
// call or approver made progress.
const maxRounds = 16

// Check implements mcpadapter.Approvals: it consumes an approval for the
// call, or holds it (recording a request, once per subject, tool and
// arguments), or answers its refusal once.
func (g *Gate) Check(ctx context.Context, call *mcpadapter.CallContext, rule *engine.Approval) (mcpadapter.ApprovalCheck, error) {
	if call.Caller == nil || call.Tool == nil {
		return mcpadapter.ApprovalCheck{}, errors.New("approvals: a call without caller or tool")
	}
	key := ledger.ApprovalKey{Subject: call.Caller.Subject, Tool: call.Tool.Name, ArgsHash: canon.SHA256(call.Arguments)}
	for range maxRounds {
		now := g.opts.Now()
		rec, err := g.store.LiveApproval(ctx, key)
		switch {
		case errors.Is(err, ledger.ErrApprovalNotFound):
			rec = ledger.ApprovalRecord{
				ID: g.opts.NewID(), Key: key, Arguments: canon.JSON(call.Arguments), Reason: rule.Reason,
				Approvers: slices.Clone(rule.Approvers), TTL: rule.TTL, Status: ledger.ApprovalPending,
				Created: now, Expires: now.Add(rule.TTL),
			}
			ok, err := g.store.CreateApproval(ctx, rec)
			if err != nil {
				return mcpadapter.ApprovalCheck{}, err
			}
			if !ok {
				continue // another identical call recorded one first
			}
			g.state(StateRequested)
			g.log.Info("approvals: call held for approval", slog.String("approval_id", rec.ID),
				slog.String("subject", key.Subject), slog.String("tool", key.Tool))
			if g.opts.OnRequest != nil {
				g.opts.OnRequest(requestOf(&rec))
			}
			return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalHeld, ID: rec.ID}, nil
		case err != nil:
			return mcpadapter.ApprovalCheck{}, err
		}
		if now.After(rec.Expires) {
			if err := g.expire(ctx, rec); err != nil {
				return mcpadapter.ApprovalCheck{}, err
			}
			continue
		}
		switch rec.Status {
		case ledger.ApprovalPending:
			return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalHeld, ID: rec.ID}, nil
		case ledger.ApprovalApproved:
			to := rec
			to.Status = ledger.ApprovalConsumed
			ok, err := g.store.TransitionApproval(ctx, ledger.ApprovalApproved, to)
			if err != nil {
				return mcpadapter.ApprovalCheck{}, err
			}
			if ok {
				g.state(StateConsumed)
				return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalConsumed, ID: rec.ID, ApprovedBy: rec.DecidedBy}, nil
			}
		case ledger.ApprovalRefused:
			to := rec
			to.Status = ledger.ApprovalClosed
			ok, err := g.store.TransitionApproval(ctx, ledger.ApprovalRefused, to)
			if err != nil {
				return mcpadapter.ApprovalCheck{}, err
			}
			if ok {
				return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalRefusedOnce, ID: rec.ID}, nil
			}
		default:
			return mcpadapter.ApprovalCheck{}, fmt.Errorf("approvals: request %s is live with status %q", rec.ID, rec.Status)
		}
		// Another call consumed the approval or was told of the refusal
		// first: look again (a new request is opened for this one).
	}
	return mcpadapter.ApprovalCheck{}, fmt.Errorf("approvals: no decision after %d rounds of contention", maxRounds)
}

// expire marks a live request past its expiry as expired.
func (g *Gate) expire(ctx context.Context, rec ledger.ApprovalRecord) error {
	from := rec.Status
	rec.Status = ledger.ApprovalExpired
	ok, err := g.store.TransitionApproval(ctx, from, rec)
	if err == nil && ok && from != ledger.ApprovalRefused {
		g.state(StateExpired)
	}
	return err
}

func (g *Gate) state(s string) {
	if g.opts.OnState != nil {
		g.opts.OnState(s)
	}
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Prune removes at most limit requests that expired more than the
// retention ago; see RunPruner.
func (g *Gate) Prune(ctx context.Context, limit int) (int, error) {
	return g.store.PruneApprovals(ctx, g.opts.Now().Add(-g.opts.Retention), limit)
}

// RunPruner prunes every interval (DefaultPruneInterval when <= 0) until
// ctx is done.
func (g *Gate) RunPruner(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultPruneInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := g.Prune(ctx, DefaultPruneBatch); err != nil && ctx.Err() == nil {
				g.log.Warn("approvals: prune failed", slog.Any("error", err))
			}
		}
	}
}
