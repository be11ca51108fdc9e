package ledger

import (
	"context"
	"os"
	"testing"
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

func openPostgres(t testing.TB) *PostgresStore {
	t.Helper()
	dsn := postgresDSN(t)
	s, err := OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", postgresEnv, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
