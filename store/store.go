package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Key names one idempotent call: the caller (Principal: identity source
// and subject), the tool and the idempotency key the client sent.
type Key struct {
	// Subject is the caller's Principal.
	Subject string
	Tool    string
	ID      string
}

// State is what Claim found.
type State int

const (
	// Claimed: the key is now held by this claim (it was free, or a running
	// claim older than its lease was taken over); run the call, then
	// Complete or Release it with ClaimResult.Token.
	Claimed State = iota + 1
	// Running: another claim with the same arguments holds the key.
	Running
	// Completed: the key completed; ClaimResult.Result is the stored result.
	Completed
	// Conflict: the key is held or completed with different arguments.
	Conflict
)

func (s State) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case Running:
		return "running"
	case Completed:
		return "completed"
	case Conflict:
		return "conflict"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ClaimResult is the answer of Store.Claim.
type ClaimResult struct {
	State State
	// Token identifies the claim when State is Claimed: only its holder can
	// Complete or Release the key, so the owner of a claim that was taken
	// over cannot touch its successor's.
	Token string
	// Result is the stored result when State is Completed.
	Result []byte
}

// ErrClaimLost is returned by Complete and Release when the key is not held
// by the token any more: it was taken over after its lease, released, or
// never claimed.
var ErrClaimLost = errors.New("ledger: claim lost (taken over, released or never held)")

// Defaults of Lifetimes.
const (
	// DefaultLease is how long a running claim holds its key.
	DefaultLease = 10 * time.Minute
	// DefaultRetention is how long a completed key is kept (docs/contract.md §10).
	DefaultRetention = 24 * time.Hour
)

// Lifetimes bound how long a store holds a key. A zero field takes its
// default.
type Lifetimes struct {
	// Lease is how long a running claim holds its key: one older may be
	// taken over. DefaultLease when zero.
	Lease time.Duration
	// Retention is how long a completed key is kept: one that completed
	// longer ago is as if absent (the next claim runs the call again) and
	// is removed by Prune. DefaultRetention when zero.
	Retention time.Duration
}

func (lt Lifetimes) withDefaults() Lifetimes {
	if lt.Lease <= 0 {
		lt.Lease = DefaultLease
	}
	if lt.Retention <= 0 {
		lt.Retention = DefaultRetention
	}
	return lt
}

// Store keeps the ledger's keys. Implementations are safe for concurrent
// use, also from several processes where the store is shared (SQLite file,
// PostgreSQL database).
type Store interface {
	// Claim atomically claims key for a call whose canonical arguments hash
	// to argsHash: of concurrent claims of one free key exactly one gets
	// Claimed. A key completed more than lt.Retention before now is free.
	// A key held or completed with another argsHash is Conflict; a
	// completed key is Completed with its result; a running claim is
	// Running until now is more than lt.Lease after it was claimed, when
	// Claim takes it over (Claimed, with a new token).
	Claim(ctx context.Context, key Key, argsHash string, now time.Time, lt Lifetimes) (ClaimResult, error)
	// Complete stores the result of the call holding key with token,
	// completed at now; the key answers Completed from then on, for its
	// retention. ErrClaimLost when token does not hold it.
	Complete(ctx context.Context, key Key, token string, result []byte, now time.Time) error
	// Release frees key held by token, so that the next call claims it.
	// ErrClaimLost when token does not hold it.
	Release(ctx context.Context, key Key, token string) error
	// Prune removes at most limit keys that completed more than
	// lt.Retention before now (a store shared by processes may also remove
	// running claims older than both lt.Lease and lt.Retention, whose
	// holders are gone) and returns how many it removed: bounded work, to
	// be run periodically (Ledger.RunPruner).
	Prune(ctx context.Context, now time.Time, lt Lifetimes, limit int) (int, error)
	// Close releases the store's resources.
	Close() error
}

// OpenStore opens a store from a --ledger value (docs/contract.md §8): "memory",
// "sqlite:PATH" or a "postgres://" / "postgresql://" DSN (ParseStore).
func OpenStore(ctx context.Context, spec string) (Store, error) {
	s, err := parseStore(spec)
	if err != nil {
		return nil, err
	}
	return s.Open(ctx)
}

// CreateStore is OpenStore, creating a SQLite file's directory first
// (StoreSpec.Create).
func CreateStore(ctx context.Context, spec string) (Store, error) {
	s, err := parseStore(spec)
	if err != nil {
		return nil, err
	}
	return s.Create(ctx)
}

func parseStore(spec string) (StoreSpec, error) {
	s, err := ParseStore(spec)
	if err != nil {
		//lint:ignore ST1005 the message ends with the form of a PostgreSQL URL, as the configuration's does
		return s, fmt.Errorf("ledger: unknown store %q: want memory, sqlite:PATH or postgres://...", spec)
	}
	return s, nil
}

// newToken returns a random claim token.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// expired reports whether a claim made at claimedAt has outlived lease at now.
func expired(claimedAt, now time.Time, lease time.Duration) bool {
	return now.Sub(claimedAt) > lease
}
