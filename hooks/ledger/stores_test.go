package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/pgtest"
	"github.com/toolgate/toolgate/store"
)

// storeKinds opens a fresh store of each kind: memory, an SQLite file of
// its own, PostgreSQL on a schema of its own (isolatedPostgres).
var storeKinds = []struct {
	name string
	// open returns a store and, for stores a second process could share, a
	// function opening a second handle on the same data.
	open func(t *testing.T) (store.Store, func() store.Store)
}{
	{"memory", func(t *testing.T) (store.Store, func() store.Store) {
		s := store.NewMemoryStore()
		return s, func() store.Store { return s }
	}},
	{"sqlite", func(t *testing.T) (store.Store, func() store.Store) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		open := func() store.Store {
			s, err := store.OpenSQLite(path)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open(), open
	}},
	{"postgres", func(t *testing.T) (store.Store, func() store.Store) {
		open := isolatedPostgres(t)
		return open(), func() store.Store { return open() }
	}},
}

// isolatedPostgres creates a schema of its own in the test database for
// the test (dropped when it ends) and returns an opener of stores on it.
// Without the database it skips, or fails under CI
// (internal/testkit/pgtest).
func isolatedPostgres(t testing.TB) func() *store.PostgresStore {
	t.Helper()
	dsn := pgtest.Schema(t, "ledger_test")
	return func() *store.PostgresStore {
		t.Helper()
		s, err := store.OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatalf("open %s on its schema: %v", pgtest.Env, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// newToken returns a random string, to keep tests' keys apart.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// claims is how many keys s holds, running or completed.
func claims(s *store.MemoryStore) int { return s.Len() }
