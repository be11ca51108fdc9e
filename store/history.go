package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// A caller's history (docs/contract.md §20) is kept in the ledger's store,
// so that replicas sharing a store see each other's entries: one entry per
// call that reached step 5, under its caller (identity source and
// subject), kept for the registry's history window and capped per caller.

// HistoryKey names whose history an entry belongs to.
type HistoryKey struct {
	Source  string
	Subject string
}

// stored is the key as the stores keep it: source and subject as a JSON
// array (unambiguous, and text PostgreSQL takes), as a SHA-256 when longer
// than maxStoredKey (an index takes any length).
func (k HistoryKey) stored() string {
	b, _ := json.Marshal([2]string{k.Source, k.Subject})
	s := string(b)
	if len(s) > maxStoredKey {
		sum := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return s
}

// HistoryEntry is one recorded call.
type HistoryEntry struct {
	Tool    string
	At      time.Time
	Outcome string
	// Arguments is a JSON object of the remembered arguments.
	Arguments []byte
}

// HistoryStore keeps callers' histories (MemoryStore, SQLiteStore and
// PostgresStore implement it). Implementations are safe for concurrent
// use, also from several processes where the store is shared.
type HistoryStore interface {
	// AppendHistory records e for k, kept until e.At+keep; past keep
	// entries of k the oldest are removed.
	AppendHistory(ctx context.Context, k HistoryKey, e HistoryEntry, keep time.Duration, cap int) error
	// ReadHistory returns k's entries after since, newest first, at most
	// max.
	ReadHistory(ctx context.Context, k HistoryKey, since time.Time, max int) ([]HistoryEntry, error)
	// PruneHistory removes at most limit entries whose time to be kept
	// ended before now and returns how many it removed.
	PruneHistory(ctx context.Context, now time.Time, limit int) (int, error)
}

var (
	_ HistoryStore = (*MemoryStore)(nil)
	_ HistoryStore = (*SQLiteStore)(nil)
	_ HistoryStore = (*PostgresStore)(nil)
)
