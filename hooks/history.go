package hooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/engine"
)

// History keeps callers' histories for input.history (docs/contract.md
// §20); hooks/ledger.History is one, over the ledger's store, so that
// replicas sharing the store see each other's entries. A caller is named
// by its identity source and subject.
type History interface {
	// Load returns the caller's entries of the last per, newest first, at
	// most max. An error fails the call closed.
	Load(ctx context.Context, source, subject string, per time.Duration, max int) (engine.History, error)
	// Record adds an entry to the caller's history, kept for per; At is
	// set by the store's clock when zero. Past max entries the caller's
	// oldest are removed.
	Record(ctx context.Context, source, subject string, e engine.HistoryEntry, per time.Duration, max int) error
}

// HistoryRead is what a decision read of the caller's history: how many
// entries, and the SHA-256 of input.history as JSON. Decision logs carry
// it instead of the entries.
type HistoryRead struct {
	Entries int    `json:"entries"`
	SHA256  string `json:"sha256"`
	// JSON is input.history as JSON, the entries themselves: a decision
	// log writes them only when its operator asks
	// (decisionlog.Options.HistoryEntries).
	JSON json.RawMessage `json:"-"`
}
