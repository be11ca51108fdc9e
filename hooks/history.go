package hooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/toolcall"
)

// History keeps callers' histories for input.history (docs/contract.md
// §20); hooks/ledger.History is one, over the ledger's store, so that
// replicas sharing the store see each other's entries. A caller is named
// by its identity source and subject.
type History interface {
	// Load returns the caller's entries of the last per, newest first, at
	// most max. An error fails the call closed.
	Load(ctx context.Context, source, subject string, per time.Duration, max int) (toolcall.History, error)
	// Record adds an entry to the caller's history, kept for per; At is
	// set by the store's clock when zero. Past max entries the caller's
	// oldest are removed.
	Record(ctx context.Context, source, subject string, e toolcall.HistoryEntry, per time.Duration, max int) error
}

// HistoryRead is what a decision read of the caller's history
// (input.history). Decision logs carry its count and hash instead of the
// entries, unless their operator asks for them.
type HistoryRead struct {
	// History is the entries read, newest first.
	History toolcall.History
}

// Entries is how many entries the decision read.
func (h *HistoryRead) Entries() int { return len(h.History) }

// JSON is input.history as JSON, the entries themselves. It is encoded
// when asked (a decision log), not on the call's path.
func (h *HistoryRead) JSON() json.RawMessage {
	b, err := json.Marshal(h.History)
	if err != nil {
		return json.RawMessage(`[]`) // not reached: entries are plain values
	}
	return b
}
