package console

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// ErrNoHistory is what Options.History answers when the registry keeps
// no history: GET /console/api/history answers 404.
var ErrNoHistory = errors.New("the registry keeps no history (history: {per, max})")

// HistoryEntry is one entry of a caller's history as the console shows it
// (docs/contract.md §20): the remembered arguments by name, each value
// replaced by the hex SHA-256 of its canonical JSON, as the live tail
// shows arguments.
type HistoryEntry struct {
	Tool      string            `json:"tool"`
	At        string            `json:"at"`
	Outcome   string            `json:"outcome"`
	Arguments map[string]string `json:"arguments"`
}

// history answers GET /console/api/history?subject=S&source=SOURCE (source
// "token" when not given: the tokens file's callers): what the caller's
// input.history holds now, newest first.
func (c *Console) history(w http.ResponseWriter, r *http.Request, _ *toolcall.Caller, _ bool) {
	q := r.URL.Query()
	subject, source := q.Get("subject"), q.Get("source")
	if subject == "" {
		httpError(w, http.StatusBadRequest, "subject is required")
		return
	}
	if source == "" {
		source = "token"
	}
	if c.opts.History == nil {
		httpError(w, http.StatusNotFound, ErrNoHistory.Error())
		return
	}
	h, err := c.opts.History(r.Context(), source, subject)
	switch {
	case errors.Is(err, ErrNoHistory):
		httpError(w, http.StatusNotFound, ErrNoHistory.Error())
		return
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, "the history store could not answer")
		return
	}
	out := make([]HistoryEntry, len(h))
	for i, e := range h {
		out[i] = HistoryEntry{Tool: e.Tool, At: e.At.UTC().Format(time.RFC3339Nano), Outcome: e.Outcome, Arguments: decisionlog.HashArguments(e.Arguments)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"subject": subject, "source": source, "entries": out})
}

// HistoryFunc loads a caller's history as its next call's input.history
// would hold it (Options.History): ErrNoHistory when the registry keeps
// none.
type HistoryFunc func(ctx context.Context, source, subject string) (engine.History, error)
