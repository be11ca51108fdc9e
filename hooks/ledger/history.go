package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// History keeps callers' histories (docs/contract.md §20) in a
// HistoryStore: it is the adapter's hooks.History.
type History struct {
	store store.HistoryStore
	now   func() time.Time
}

// NewHistory returns a History over store; now is the clock (time.Now
// when nil). It panics when store is nil.
func NewHistory(store store.HistoryStore, now func() time.Time) *History {
	if store == nil {
		panic("ledger: a history store is required")
	}
	if now == nil {
		now = time.Now
	}
	return &History{store: store, now: now}
}

var _ hooks.History = (*History)(nil)

// ErrHistoryStore is wrapped by a History's failures: the store could not
// answer, and the call fails closed.
var ErrHistoryStore = errors.New("ledger: the history store could not answer")

// Load implements hooks.History.
func (h *History) Load(ctx context.Context, source, subject string, per time.Duration, max int) (toolcall.History, error) {
	es, err := h.store.ReadHistory(ctx, store.HistoryKey{Source: source, Subject: subject}, h.now().Add(-per), max)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHistoryStore, err)
	}
	out := make(toolcall.History, len(es))
	for i, e := range es {
		out[i] = toolcall.HistoryEntry{Tool: e.Tool, At: e.At.UTC(), Outcome: e.Outcome, Arguments: e.Arguments}
	}
	return out, nil
}

// Record implements hooks.History.
func (h *History) Record(ctx context.Context, source, subject string, e toolcall.HistoryEntry, per time.Duration, max int) error {
	if e.At.IsZero() {
		e.At = h.now()
	}
	err := h.store.AppendHistory(ctx, store.HistoryKey{Source: source, Subject: subject},
		store.HistoryEntry{Tool: e.Tool, At: e.At, Outcome: e.Outcome, Arguments: e.Arguments}, per, max)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHistoryStore, err)
	}
	return nil
}
