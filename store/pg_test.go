package store

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit/pgtest"
)

// isolatedPostgres creates a schema of its own in the test database for
// the test (dropped when it ends) and returns an opener of stores on it:
// tests that prune by time see, and delete, only their own rows. Without
// the database it skips, or fails under CI (internal/testkit/pgtest).
func isolatedPostgres(t testing.TB) func() *PostgresStore {
	t.Helper()
	dsn := pgtest.Schema(t, "ledger_test")
	return func() *PostgresStore {
		t.Helper()
		s, err := OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatalf("open %s on its schema: %v", pgtest.Env, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
