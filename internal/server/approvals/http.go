package approvals

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/toolcall"
)

// maxBodyBytes bounds the body of a decision ({"note": "..."}).
const maxBodyBytes = 8 << 10

// Handler serves the approvers' HTTP endpoints (docs/contract.md §13) for the caller
// callerOf finds in each request (httpserve.RequestCaller):
//
//   - GET /approvals[?limit=N][&after=CURSOR]: a page of the pending
//     requests the caller may decide, oldest first, as {"approvals":
//     [...], "next": CURSOR} (next omitted on the last page; limit 1 to
//     MaxListLimit, DefaultListLimit when absent);
//   - POST /approvals/{id}/approve and POST /approvals/{id}/refuse, with
//     an optional JSON body {"note": "..."} of at most 8 KiB: the request
//     as decided.
//
// Nobody gets 401, the requester deciding their own request 403, an
// unknown id or one the caller may not see 404 (alike: the answer never
// tells whether an id exists), a request no longer pending 409.
func (g *Gate) Handler(callerOf func(*http.Request) *toolcall.Caller) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /approvals", func(w http.ResponseWriter, r *http.Request) {
		c := callerOf(r)
		if c == nil {
			unauthorized(w)
			return
		}
		q := r.URL.Query()
		limit := DefaultListLimit
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 || n > MaxListLimit {
				http.Error(w, "limit must be a number from 1 to "+strconv.Itoa(MaxListLimit), http.StatusBadRequest)
				return
			}
			limit = n
		}
		list, next, err := g.PendingPage(r.Context(), c, q.Get("after"), limit)
		if errors.Is(err, ErrBadCursor) {
			http.Error(w, "after must be the next cursor of a listing", http.StatusBadRequest)
			return
		}
		if err != nil {
			g.log.Error("approvals: list failed", slog.Any("error", err))
			http.Error(w, "approvals are not available", http.StatusInternalServerError)
			return
		}
		page := map[string]any{"approvals": list}
		if next != "" {
			page["next"] = next
		}
		writeJSON(w, http.StatusOK, page)
	})
	decide := func(approve bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c := callerOf(r)
			if c == nil {
				unauthorized(w)
				return
			}
			var body struct {
				Note string `json:"note"`
			}
			if r.Body != nil {
				data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
				if err != nil {
					http.Error(w, "cannot read the body", http.StatusBadRequest)
					return
				}
				if len(data) > maxBodyBytes {
					http.Error(w, "the body is too large", http.StatusRequestEntityTooLarge)
					return
				}
				if len(strings.TrimSpace(string(data))) > 0 {
					if err := json.Unmarshal(data, &body); err != nil {
						http.Error(w, `the body must be a JSON object {"note": "..."}`, http.StatusBadRequest)
						return
					}
				}
			}
			req, err := g.Decide(r.Context(), c, r.PathValue("id"), approve, body.Note)
			switch {
			case errors.Is(err, ErrNotFound):
				http.Error(w, "no such approval request", http.StatusNotFound)
			case errors.Is(err, ErrForbidden):
				http.Error(w, "you may not decide this approval request", http.StatusForbidden)
			case errors.Is(err, ErrNotPending):
				http.Error(w, "the approval request is not pending", http.StatusConflict)
			case err != nil:
				g.log.Error("approvals: decision failed", slog.Any("error", err))
				http.Error(w, "approvals are not available", http.StatusInternalServerError)
			default:
				writeJSON(w, http.StatusOK, req)
			}
		}
	}
	mux.HandleFunc("POST /approvals/{id}/approve", decide(true))
	mux.HandleFunc("POST /approvals/{id}/refuse", decide(false))
	return mux
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	http.Error(w, "a bearer token is required", http.StatusUnauthorized)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
