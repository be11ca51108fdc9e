package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/console"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
)

// TestHistoryView: an operator sees what a caller's history holds, newest
// first, its remembered values only as hashes; another caller's (another
// subject, or the same subject of another source) is not in it; only the
// operator may ask; without a history the view answers 404.
func TestHistoryView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng, err := engine.New(ctx, toolgate.Source("", ""), engine.WithTimeout(time.Minute))
	require.NoError(t, err)
	hist := ledger.NewHistory(store.NewMemoryStore(), nil)
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i, e := range []struct{ source, subject, tool, args string }{
		{"token", "ann", "read_record", `{"id":"secret-r7"}`},
		{"token", "ann", "delete_record", `{"id":"secret-r7"}`},
		{"token", "bob", "read_record", `{"id":"secret-r8"}`},
		{"jwt", "ann", "pay", `{}`},
	} {
		require.NoError(t, hist.Record(ctx, e.source, e.subject, engine.HistoryEntry{Tool: e.tool, At: at.Add(time.Duration(i) * time.Minute), Outcome: "result", Arguments: json.RawMessage(e.args)}, 24*time.Hour*365*10, 10))
	}
	newConsole := func(h console.HistoryFunc) *httptest.Server {
		c := console.New(console.Options{
			Auth: func(r *http.Request) (*toolcall.Caller, bool) {
				tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
				c := people[tok]
				return c, c != nil && c.Subject == "ops"
			},
			Explainer: console.ExplainerFunc(func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation {
				return inspect.Explain(ctx, inspect.ExplainOptions{Revision: eng.Current(), Caller: c, Tool: tool, Meta: meta})
			}),
			History: h,
		})
		srv := httptest.NewServer(c)
		t.Cleanup(srv.Close)
		return srv
	}
	srv := newConsole(func(ctx context.Context, source, subject string) (engine.History, error) {
		return hist.Load(ctx, source, subject, 24*time.Hour*365*10, 10)
	})
	get := func(srv *httptest.Server, path, token string) (int, string) {
		code, body := mcptest.Do(t, t.Context(), "GET", srv.URL+path, token, "")
		return code, string(body)
	}

	code, body := get(srv, "/console/api/history?subject=ann", "tok-ops")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		Subject, Source string
		Entries         []console.HistoryEntry
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, "ann", got.Subject)
	assert.Equal(t, "token", got.Source)
	require.Len(t, got.Entries, 2, "ann's of the tokens file only")
	assert.Equal(t, "delete_record", got.Entries[0].Tool, "newest first")
	assert.Equal(t, "2026-01-01T12:01:00Z", got.Entries[0].At)
	assert.Equal(t, "result", got.Entries[0].Outcome)
	assert.Len(t, got.Entries[0].Arguments["id"], 64, "a remembered value as its hash")
	assert.NotContains(t, body, "secret", "no remembered value")

	code, body = get(srv, "/console/api/history?subject=ann&source=jwt", "tok-ops")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Entries, 1)
	assert.Equal(t, "pay", got.Entries[0].Tool)

	code, _ = get(srv, "/console/api/history?subject=ann", "tok-approver")
	assert.Equal(t, http.StatusForbidden, code, "operators only")
	code, _ = get(srv, "/console/api/history", "tok-ops")
	assert.Equal(t, http.StatusBadRequest, code)

	code, body = get(newConsole(nil), "/console/api/history?subject=ann", "tok-ops")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "the registry keeps no history")
	code, _ = get(newConsole(func(context.Context, string, string) (engine.History, error) { return nil, console.ErrNoHistory }),
		"/console/api/history?subject=ann", "tok-ops")
	assert.Equal(t, http.StatusNotFound, code)
	code, body = get(newConsole(func(context.Context, string, string) (engine.History, error) { return nil, ledger.ErrHistoryStore }),
		"/console/api/history?subject=ann", "tok-ops")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.NotContains(t, body, "ledger")
}
