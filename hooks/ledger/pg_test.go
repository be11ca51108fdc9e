package ledger

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresEnv names the DSN of the PostgreSQL the tests use; scripts/pg-start
// starts one on loopback and prints the export line.
const postgresEnv = "TOOLGATE_TEST_POSTGRES"

// postgresDSN returns the test database's DSN. Without one, the test is
// skipped under -short and outside CI, and fails in CI (the CI env var is
// set) so PostgreSQL is never skipped silently there.
func postgresDSN(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL tests are skipped with -short")
	}
	dsn := os.Getenv(postgresEnv)
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set: run eval \"$(scripts/pg-start)\" before go test", postgresEnv)
	}
	t.Skipf("set %s (scripts/pg-start) to run PostgreSQL tests", postgresEnv)
	return ""
}

// isolatedPostgres creates a schema of its own in the test database for
// the test (dropped when it ends) and returns an opener of stores on it:
// tests that prune by time see, and delete, only their own rows.
func isolatedPostgres(t testing.TB) func() *PostgresStore {
	t.Helper()
	dsn := postgresDSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", postgresEnv, err)
	}
	schema := "ledger_test_" + newToken()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(ctx)
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return func() *PostgresStore {
		t.Helper()
		s, err := OpenPostgres(ctx, dsn+sep+"search_path="+schema)
		if err != nil {
			t.Fatalf("open %s on schema %s: %v", postgresEnv, schema, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
