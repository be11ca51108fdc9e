package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/testkit/pgtest"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

type sourceKey struct{}

// TestStoredResultsNeverReplayAcrossSources: the tokens file's "alice"
// and the issuer's "alice" send the same idempotency key: each runs the
// call once and is answered its own stored result, never the other's.
func TestStoredResultsNeverReplayAcrossSources(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"registry.yaml":      {Data: []byte("tools:\n  - { name: count, method: demo.count, arguments: [{ name: key, type: string, required: true }] }\n")},
		"policies/call.rego": {Data: []byte("package toolgate.call\n")},
	}
	e, err := engine.New(context.Background(), engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}, engine.WithTimeout(10*time.Second))
	require.NoError(t, err)
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			var runs atomic.Int32
			methods := methods.Map{}
			methods.Register("demo.count", func(_ context.Context, a struct {
				Key string `json:"key"`
			}) (string, error) {
				return fmt.Sprintf("run %d", runs.Add(1)), nil
			})
			s, _ := kind.open(t)
			a := mcpadapter.New(mcpadapter.Options{Revisions: e, Methods: methods,
				Caller: mcpadapter.StaticCaller(&toolcall.Caller{Subject: "alice"}),
				Source: func(ctx context.Context, _ mcp.Request) string { return ctx.Value(sourceKey{}).(string) }})
			a.AddHook(New(s, Options{}).Hook())
			key := mcp.Meta{"festi/idempotencyKey": "order-" + newToken()}
			callAs := func(source string) string {
				ctx := context.WithValue(context.Background(), sourceKey{}, source)
				res := a.Call(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "count", Arguments: json.RawMessage(`{"key":"k"}`), Meta: key}})
				return res.Content[0].(*mcp.TextContent).Text
			}
			first := callAs("token")
			second := callAs("jwt")
			assert.NotEqual(t, first, second, "the issuer's alice ran her own call")
			assert.Equal(t, first, callAs("token"), "a replay to the same caller")
			assert.Equal(t, second, callAs("jwt"))
			assert.EqualValues(t, 2, runs.Load())
		})
	}
}

// oldApprovalsDDL is the approvals table as stores made it before
// requests were keyed by source.
var oldApprovalsDDL = []string{
	`CREATE TABLE toolgate_approvals (
		id TEXT NOT NULL PRIMARY KEY, subject TEXT NOT NULL, tool TEXT NOT NULL, args_hash TEXT NOT NULL,
		arguments %s, reason TEXT NOT NULL, approvers TEXT NOT NULL, ttl_ns %s NOT NULL, status TEXT NOT NULL,
		created_at %s NOT NULL, expires_at %s NOT NULL, decided_by TEXT NOT NULL DEFAULT '',
		decided_at %s NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '')`,
	`CREATE UNIQUE INDEX toolgate_approvals_live ON toolgate_approvals (subject, tool, args_hash) WHERE status IN ('pending', 'approved', 'refused')`,
	`INSERT INTO toolgate_approvals (id, subject, tool, args_hash, arguments, reason, approvers, ttl_ns, status, created_at, expires_at)
	 VALUES ('old1', 'root', 'wipe', 'h', '{}', 'r', '["admin"]', 3600000000000, 'pending', 1, 9000000000000000000)`,
}

func oldDDL(q, bytesType, intType string) string {
	if !strings.Contains(q, "%s") {
		return q
	}
	return fmt.Sprintf(q, bytesType, intType, intType, intType, intType)
}

// TestApprovalsTableGainsSource: a store made before requests were keyed
// by source is migrated when opened: its requests get source "unknown"
// (listed and decidable, consumed by no call), and the live key holds
// the source, so two sources' identical calls are held apart.
func TestApprovalsTableGainsSource(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, s ApprovalStore) {
		ctx := context.Background()
		old, err := s.ApprovalByID(ctx, "old1")
		require.NoError(t, err)
		assert.Equal(t, SourceBeforeUpgrade, old.Key.Source)
		_, err = s.LiveApproval(ctx, ApprovalKey{Source: "token", Subject: "root", Tool: "wipe", ArgsHash: "h"})
		assert.ErrorIs(t, err, ErrApprovalNotFound, "no caller's key matches a request from before")
		now := time.Unix(100, 0)
		for _, src := range []string{"token", "jwt"} {
			ok, err := s.CreateApproval(ctx, ApprovalRecord{ID: "new-" + src, Key: ApprovalKey{Source: src, Subject: "root", Tool: "wipe", ArgsHash: "h"},
				Arguments: json.RawMessage(`{}`), Reason: "r", Approvers: []string{"admin"}, TTL: time.Hour, Status: ApprovalPending,
				Created: now, Expires: now.Add(time.Hour)})
			require.NoError(t, err)
			assert.True(t, ok, "a live request of source %s beside the other's", src)
		}
		list, err := s.PendingApprovals(ctx, now, PendingQuery{Roles: []string{"admin"}, Limit: 10})
		require.NoError(t, err)
		assert.Len(t, list, 3)
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "old.db")
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		for _, q := range oldApprovalsDDL {
			_, err := db.Exec(oldDDL(q, "BLOB", "INTEGER"))
			require.NoError(t, err)
		}
		require.NoError(t, db.Close())
		s, err := OpenSQLite(path)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		check(t, s)
		again, err := OpenSQLite(path) // a second open finds it migrated
		require.NoError(t, err)
		require.NoError(t, again.Close())
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.Schema(t, "ledger_migrate")
		conn, err := pgx.Connect(context.Background(), dsn)
		require.NoError(t, err)
		for _, q := range oldApprovalsDDL {
			_, err := conn.Exec(context.Background(), oldDDL(q, "BYTEA", "BIGINT"))
			require.NoError(t, err)
		}
		require.NoError(t, conn.Close(context.Background()))
		s, err := OpenPostgres(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		check(t, s)
	})
}
