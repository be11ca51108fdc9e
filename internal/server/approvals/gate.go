package approvals

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/internal/servesettings"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// Defaults of Options.
const (
	// DefaultRetention is how long a request is kept once it expired.
	DefaultRetention = 24 * time.Hour
	// DefaultPruneBatch bounds the requests one prune run removes.
	DefaultPruneBatch = 1000
	// DefaultPruneInterval is how often RunPruner prunes.
	DefaultPruneInterval = time.Minute
	// DefaultListLimit is the page size of a listing (Pending, GET
	// /approvals without ?limit); MaxListLimit bounds ?limit.
	DefaultListLimit = 100
	MaxListLimit     = 1000
	// DefaultMaxPending bounds the requests one requester (identity
	// source and subject) may have pending at once
	// (servesettings.DefaultMaxPending).
	DefaultMaxPending = servesettings.DefaultMaxPending
	// DefaultMaxArgumentBytes bounds the canonical arguments kept with a
	// request: a larger call that needs an approval is refused.
	DefaultMaxArgumentBytes = 64 << 10
)

// TooManyPending is the answer to a call that needs an approval while its
// caller has max requests pending (docs/contract.md §13).
func TooManyPending(max int) string {
	return fmt.Sprintf("Too many approval requests of yours are pending (at most %d). Call again once one is decided or expired.", max)
}

// ArgumentsTooLarge is the answer to a call that needs an approval whose
// arguments are larger than an approval request keeps (docs/contract.md §13).
func ArgumentsTooLarge(max int) string {
	return fmt.Sprintf("The arguments are too large to hold for approval (at most %d bytes).", max)
}

// The states counted by Options.OnState (toolgate_approvals_total{state}).
const (
	StateRequested = "requested" // a new request was recorded
	StateApproved  = "approved"  // an approver approved one
	StateRefused   = "refused"   // an approver refused one
	StateConsumed  = "consumed"  // a call consumed an approval and ran
	StateExpired   = "expired"   // a request or an approval expired unused
)

// Options configure a Gate: its settings (Settings, which `toolgate
// serve` reads; the caller starts the Webhook they name with NewWebhook and
// hands its Notify to OnRequest), and what the caller builds. The zero
// value takes every default.
type Options struct {
	Settings
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
	// MaxArgumentBytes bounds the canonical arguments kept with a
	// request; DefaultMaxArgumentBytes when zero.
	MaxArgumentBytes int
	// NewID makes the id of a new request; nil: 24 random hex digits.
	// Ids must be unique and unguessable (tests may make them
	// predictable).
	NewID func() string
}

// Gate holds calls for approval in an approval store.
type Gate struct {
	store store.ApprovalStore
	opts  Options
	log   *slog.Logger

	mu    sync.Mutex
	roles map[string]bool // approver roles rules named since start (IsApprover)
}

// New returns a Gate over store. It panics when store is nil.
func New(store store.ApprovalStore, opts Options) *Gate {
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
	if opts.MaxPending == 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxArgumentBytes <= 0 {
		opts.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Gate{store: store, opts: opts, log: log, roles: map[string]bool{}}
}

var _ mcpadapter.Approvals = (*Gate)(nil)

// Request is an approval request as approvers, the webhook and the
// command line see it.
type Request struct {
	ID string `json:"id"`
	// Source is the requester's identity source ("token", "jwt", "local";
	// "unknown" for a request recorded before sources were kept).
	Source  string `json:"source"`
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
	// Shown is how a person is shown the request's strings: each passed
	// through Visible, as the webhook and the command line show them.
	// Pages render these, never the raw fields.
	Shown Shown `json:"shown"`
}

// Shown holds a request's strings as a person is shown them (Visible),
// and Escaped marks the fields (by JSON name) whose text escaping
// changed: a page says so beside them.
type Shown struct {
	ID        string   `json:"id"`
	Subject   string   `json:"subject"`
	Tool      string   `json:"tool"`
	Reason    string   `json:"reason"`
	DecidedBy string   `json:"decided_by,omitempty"`
	Note      string   `json:"note,omitempty"`
	Approvers []string `json:"approvers"`
	Escaped   []string `json:"escaped"`
}

func requestOf(r *store.ApprovalRecord) Request {
	req := Request{ID: r.ID, Source: r.Key.Source, Subject: r.Key.Subject, Tool: r.Key.Tool, Arguments: r.Arguments, ArgumentsText: ArgumentsText(r.Arguments), Reason: r.Reason,
		Approvers: r.Approvers, Status: string(r.Status), Created: r.Created.UTC(), Expires: r.Expires.UTC(),
		DecidedBy: r.DecidedBy, DecidedAt: utcOrZero(r.DecidedAt), Note: r.Note}
	req.Shown = shownOf(&req)
	return req
}

// shownOf is Shown for r.
func shownOf(r *Request) Shown {
	sh := Shown{Escaped: []string{}, Approvers: make([]string, len(r.Approvers))}
	show := func(name, s string) string {
		v := Visible(s)
		if v != s {
			sh.Escaped = append(sh.Escaped, name)
		}
		return v
	}
	sh.ID = show("id", r.ID)
	sh.Subject = show("subject", r.Subject)
	sh.Tool = show("tool", r.Tool)
	sh.Reason = show("reason", r.Reason)
	if len(r.Arguments) > 0 && !bytes.Equal(VisibleJSON(r.Arguments), r.Arguments) {
		sh.Escaped = append(sh.Escaped, "arguments")
	}
	escaped := false
	for i, a := range r.Approvers {
		if sh.Approvers[i] = Visible(a); sh.Approvers[i] != a {
			escaped = true
		}
	}
	if escaped {
		sh.Escaped = append(sh.Escaped, "approvers")
	}
	sh.DecidedBy = show("decided_by", r.DecidedBy)
	sh.Note = show("note", r.Note)
	return sh
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
func (g *Gate) Check(ctx context.Context, call *hooks.CallContext, rule *engine.Approval) (mcpadapter.ApprovalCheck, error) {
	if call.Caller == nil || call.Tool == nil {
		return mcpadapter.ApprovalCheck{}, errors.New("approvals: a call without caller or tool")
	}
	source := call.Source
	if source == "" {
		source = hooks.SourceLocal
	}
	g.rememberRoles(rule.Approvers)
	key := store.ApprovalKey{Source: source, Subject: call.Caller.Subject, Tool: call.Tool.Name, ArgsHash: canon.SHA256(call.Arguments)}
	for range maxRounds {
		now := g.opts.Now()
		rec, err := g.store.LiveApproval(ctx, key)
		switch {
		case errors.Is(err, store.ErrApprovalNotFound):
			args := canon.JSON(call.Arguments)
			if len(args) > g.opts.MaxArgumentBytes {
				return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalNotRecorded, Message: ArgumentsTooLarge(g.opts.MaxArgumentBytes)}, nil
			}
			if g.opts.MaxPending > 0 {
				n, err := g.store.CountPending(ctx, key.Source, key.Subject, now)
				if err != nil {
					return mcpadapter.ApprovalCheck{}, err
				}
				if n >= g.opts.MaxPending {
					g.log.Warn("approvals: call refused: too many requests pending", slog.String("source", key.Source),
						slog.String("subject", key.Subject), slog.String("tool", key.Tool), slog.Int("pending", n))
					return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalNotRecorded, Message: TooManyPending(g.opts.MaxPending)}, nil
				}
			}
			rec = store.ApprovalRecord{
				ID: g.opts.NewID(), Key: key, Arguments: args, Reason: rule.Reason,
				Approvers: slices.Clone(rule.Approvers), TTL: rule.TTL, Status: store.ApprovalPending,
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
		case store.ApprovalPending:
			return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalHeld, ID: rec.ID}, nil
		case store.ApprovalApproved:
			to := rec
			to.Status = store.ApprovalConsumed
			ok, err := g.store.TransitionApproval(ctx, store.ApprovalApproved, to)
			if err != nil {
				return mcpadapter.ApprovalCheck{}, err
			}
			if ok {
				g.state(StateConsumed)
				return mcpadapter.ApprovalCheck{State: mcpadapter.ApprovalConsumed, ID: rec.ID, ApprovedBy: rec.DecidedBy}, nil
			}
		case store.ApprovalRefused:
			to := rec
			to.Status = store.ApprovalClosed
			ok, err := g.store.TransitionApproval(ctx, store.ApprovalRefused, to)
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
func (g *Gate) expire(ctx context.Context, rec store.ApprovalRecord) error {
	from := rec.Status
	rec.Status = store.ApprovalExpired
	ok, err := g.store.TransitionApproval(ctx, from, rec)
	if err == nil && ok && from != store.ApprovalRefused {
		g.state(StateExpired)
	}
	return err
}

func (g *Gate) state(s string) {
	if g.opts.OnState != nil {
		g.opts.OnState(s)
	}
}

// maxRoles bounds the approver roles a Gate remembers.
const maxRoles = 1024

func (g *Gate) rememberRoles(roles []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range roles {
		if len(g.roles) >= maxRoles {
			return
		}
		g.roles[r] = true
	}
}

// IsApprover reports whether caller may be shown the approval queue's
// changes: a caller with a role an approval rule named since start, or
// who may decide a request pending now (one recorded by another
// replica, or before a restart).
func (g *Gate) IsApprover(ctx context.Context, caller *toolcall.Caller) bool {
	if caller == nil || caller.Subject == "" {
		return false
	}
	g.mu.Lock()
	for _, r := range caller.Roles {
		if g.roles[r] {
			g.mu.Unlock()
			return true
		}
	}
	g.mu.Unlock()
	recs, err := g.store.PendingApprovals(ctx, g.opts.Now(), store.PendingQuery{Roles: caller.Roles, NotSubject: caller.Subject, Limit: 1})
	return err == nil && len(recs) > 0
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
