// Package pgtest points tests at the test PostgreSQL (scripts/pg-start
// starts one on loopback and prints the line that sets Env). Tests only.
//
// Without a database a test is skipped, with the how-to in the message,
// except under CI (the CI environment variable set), where that is a
// failure: PostgreSQL is never skipped silently there. Under go test
// -short it is always skipped.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the DSN of the test database.
const Env = "TOOLGATE_TEST_POSTGRES"

// DSN returns the test database's DSN, or skips (fails under CI) as the
// package doc says.
func DSN(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("PostgreSQL tests are skipped with -short (they run with %s set, scripts/pg-start)", Env)
	}
	dsn := os.Getenv(Env)
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set: run eval \"$(scripts/pg-start)\" before go test", Env)
	}
	t.Skipf("set %s (scripts/pg-start) to run PostgreSQL tests", Env)
	return ""
}

// Schema creates a schema of the test's own, named prefix and a random
// suffix, in the test database, drops it when the test ends, and returns a
// DSN whose search_path is that schema: tests that prune by time or count
// rows see only their own. It skips as DSN does.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	dsn := DSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", Env, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := prefix + "_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = conn.Close(ctx)
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close(ctx)
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
