package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/canon"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// The exact refusals of docs/contract.md §10.
const (
	MsgRunning  = "This call is already running. Retry once it finished."
	MsgConflict = "This idempotency key was used with different arguments."
)

// Defaults of Options.
const (
	DefaultMetaKey = "festi/idempotencyKey"
	DefaultLease   = store.DefaultLease
	// DefaultRetention is how long a completed key is kept (docs/contract.md §10).
	DefaultRetention = store.DefaultRetention
	// DefaultPruneBatch is how many keys one Prune run removes at most.
	DefaultPruneBatch = 1000
	// DefaultPruneInterval is how often RunPruner prunes.
	DefaultPruneInterval = time.Minute
	// HookName is the name the ledger's hook registers under.
	HookName = "ledger"
)

// Options configure a Ledger. The zero value takes every default.
type Options struct {
	// MetaKey is the _meta entry holding the idempotency key;
	// DefaultMetaKey when empty.
	MetaKey string
	// Lease is how long a running claim holds its key before another call
	// may take it over; DefaultLease when zero.
	Lease time.Duration
	// Retention is how long a completed key answers its stored result;
	// then it is as if absent and is pruned. DefaultRetention when zero.
	Retention time.Duration
	// PruneBatch bounds the keys one Prune run removes; DefaultPruneBatch
	// when zero.
	PruneBatch int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Logger receives the after half's store failures; nil discards them.
	Logger *slog.Logger
	// OnReplay, when set, is called each time a completed key is answered.
	OnReplay func()
	// OnConflict, when set, is called each time a key is refused for
	// different arguments.
	OnConflict func()
}

// Ledger is the idempotency ledger of docs/contract.md §10 over a Store. It is safe for
// concurrent use; several Ledgers (replicas) may share one Store's database.
type Ledger struct {
	store store.Store
	opts  Options
	log   *slog.Logger
}

// New returns a Ledger over store. The Ledger does not own the store: close
// it yourself once the hooks no longer run.
func New(s store.Store, opts Options) *Ledger {
	if opts.MetaKey == "" {
		opts.MetaKey = DefaultMetaKey
	}
	if opts.Lease <= 0 {
		opts.Lease = store.DefaultLease
	}
	if opts.Retention <= 0 {
		opts.Retention = store.DefaultRetention
	}
	if opts.PruneBatch <= 0 {
		opts.PruneBatch = DefaultPruneBatch
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ledger{store: s, opts: opts, log: log}
}

func (l *Ledger) lifetimes() store.Lifetimes {
	return store.Lifetimes{Lease: l.opts.Lease, Retention: l.opts.Retention}
}

// Prune removes, once, at most Options.PruneBatch keys whose retention (or,
// in a shared store, whose lease and retention) ended and, when the store
// counts rate limits (LimitStore), at most as many counted calls whose
// windows ended, and as many history entries (HistoryStore); it returns
// the most it removed of one kind.
func (l *Ledger) Prune(ctx context.Context) (int, error) {
	now := l.opts.Now()
	n, err := l.store.Prune(ctx, now, l.lifetimes(), l.opts.PruneBatch)
	if err != nil {
		return n, err
	}
	if ls, ok := l.store.(store.LimitStore); ok {
		m, err := ls.PruneLimits(ctx, now, l.opts.PruneBatch)
		if n = max(n, m); err != nil {
			return n, err
		}
	}
	if hs, ok := l.store.(store.HistoryStore); ok {
		// Callers' histories (docs/contract.md §20), as their windows pass.
		m, err := hs.PruneHistory(ctx, now, l.opts.PruneBatch)
		return max(n, m), err
	}
	return n, nil
}

// RunPruner prunes every interval (DefaultPruneInterval when interval <= 0)
// until ctx is done; a run that removed a full batch is followed by the
// next at once, so a backlog drains in bounded steps. Failures are logged.
// Run it in its own goroutine; it returns when ctx is done.
func (l *Ledger) RunPruner(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultPruneInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := l.Prune(ctx)
		if err != nil && ctx.Err() == nil {
			l.log.Error("ledger: pruning expired keys failed", slog.Any("error", err))
		}
		if err == nil && n >= l.opts.PruneBatch {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Hook returns the ledger's before and after halves, named HookName. For a
// call without an idempotency key (or without a caller) both are prompt:
// they return without touching the store.
func (l *Ledger) Hook() hooks.Hook {
	return hooks.Hook{Name: HookName, Before: l.before, After: l.after, PromptFor: l.unkeyed}
}

// unkeyed reports whether call has nothing for the ledger: no caller, or
// no idempotency key in its _meta.
func (l *Ledger) unkeyed(call *hooks.CallContext) bool {
	id, ok := call.Meta.String(l.opts.MetaKey)
	return !ok || id == "" || call.Caller == nil
}

// Principal is the caller's key in the ledger: its identity source and
// subject ("token:alice", "jwt:alice"; source "" is
// hooks.SourceLocal). A source name holds no ':', so two callers
// never share a key: a result stored for the tokens file's "alice" is
// never replayed to the issuer's. (Keys stored before sources were kept
// hold the bare subject: no caller matches them; they are pruned after
// their retention.)
func Principal(source, subject string) string {
	if source == "" {
		source = hooks.SourceLocal
	}
	return source + ":" + subject
}

// valueKey is where a Ledger keeps its claim in a CallContext; keyed by the
// Ledger so that two ledgers on one adapter never read each other's.
type valueKey struct{ l *Ledger }

// claim is what the before half of one call claimed. The mutex matters only
// when the adapter abandons a before half past its deadline: the after half
// then runs while Claim may still be on its way back.
type claim struct {
	mu       sync.Mutex
	key      store.Key
	token    string // set once Claim answered Claimed
	finished bool   // the after half ran
}

func (l *Ledger) before(ctx context.Context, call *hooks.CallContext) (hooks.Verdict, error) {
	if l.unkeyed(call) {
		return hooks.Allow(), nil
	}
	id, _ := call.Meta.String(l.opts.MetaKey)
	c := &claim{key: store.Key{Subject: Principal(call.Source, call.Caller.Subject), Tool: call.Name, ID: id}}
	call.SetValue(valueKey{l}, c)
	res, err := l.store.Claim(ctx, c.key, canon.SHA256(call.Arguments), l.opts.Now(), l.lifetimes())
	if err != nil {
		return hooks.Verdict{}, err
	}
	switch res.State {
	case store.Claimed:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.finished {
			// The call ended without us: nothing will complete the claim.
			l.release(context.WithoutCancel(ctx), call, c.key, res.Token)
			return hooks.Allow(), nil
		}
		c.token = res.Token
		return hooks.Allow(), nil
	case store.Completed:
		var stored mcp.CallToolResult
		if err := json.Unmarshal(res.Result, &stored); err != nil {
			return hooks.Verdict{}, fmt.Errorf("ledger: stored result of key %q is unreadable: %w", id, err)
		}
		if l.opts.OnReplay != nil {
			l.opts.OnReplay()
		}
		return hooks.Answer(&stored), nil
	case store.Running:
		return hooks.Deny(MsgRunning), nil
	case store.Conflict:
		if l.opts.OnConflict != nil {
			l.opts.OnConflict()
		}
		return hooks.Deny(MsgConflict), nil
	}
	return hooks.Verdict{}, fmt.Errorf("ledger: store answered an unknown state %v", res.State)
}

func (l *Ledger) after(ctx context.Context, call *hooks.CallContext, end *hooks.Record) error {
	c, _ := call.Value(valueKey{l}).(*claim)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	token := c.token
	c.token, c.finished = "", true
	c.mu.Unlock()
	if token == "" {
		return nil // this call claimed nothing: a replay, a refusal, a failed claim
	}
	// An input-required result (2026-07-28: the method asks the client
	// and the client calls again, with the same key, bringing the answers)
	// is not the call's outcome: stored, it would be answered to that very
	// retry, which would ask again forever.
	if end.Outcome != toolcall.OutcomeResult || end.Result == nil || end.Result.InputRequests != nil || end.Result.NeedsInput() {
		return l.release(ctx, call, c.key, token)
	}
	result, err := json.Marshal(end.Result)
	if err != nil {
		err = fmt.Errorf("ledger: encode result: %w", err)
		if rerr := l.release(ctx, call, c.key, token); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	}
	if err := l.store.Complete(ctx, c.key, token, result, l.opts.Now()); err != nil {
		l.log.Error("ledger: completing the key failed; a retry will run the call again once the lease ends",
			slog.String("decision_id", call.DecisionID), slog.String("tool", c.key.Tool), slog.Any("error", err))
		return err
	}
	return nil
}

func (l *Ledger) release(ctx context.Context, call *hooks.CallContext, key store.Key, token string) error {
	err := l.store.Release(ctx, key, token)
	if err != nil {
		l.log.Error("ledger: releasing the key failed; it stays running until its lease ends",
			slog.String("decision_id", call.DecisionID), slog.String("tool", key.Tool), slog.Any("error", err))
	}
	return err
}
