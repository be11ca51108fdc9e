package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseStore: the three kinds of --ledger value, and everything else
// refused with the accepted forms named.
func TestParseStore(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]StoreSpec{
		"memory":                  {Kind: KindMemory},
		"sqlite:":                 {Kind: KindSQLite},
		"sqlite:/var/lib/l.db":    {Kind: KindSQLite, Path: "/var/lib/l.db"},
		"sqlite::memory:":         {Kind: KindSQLite, Path: ":memory:"},
		"postgres://u@h/db":       {Kind: KindPostgres, DSN: "postgres://u@h/db"},
		"postgresql://u@h/db?x=1": {Kind: KindPostgres, DSN: "postgresql://u@h/db?x=1"},
	} {
		got, err := ParseStore(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Equal(t, in, got.String(), "String gives the value back")
	}
	for _, bad := range []string{"", "Memory", "redis://x", "sqlite", "postgres:/x", " memory"} {
		_, err := ParseStore(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "want memory, sqlite:PATH or postgres://...", bad)
	}
	assert.True(t, StoreSpec{Kind: KindSQLite, Path: "l.db"}.IsFile())
	for _, p := range []string{"", ":memory:", "file:l.db?mode=ro"} {
		assert.False(t, StoreSpec{Kind: KindSQLite, Path: p}.IsFile(), p)
	}
}

// TestCreateStoreMakesTheDirectory: Create (serve, toolgate approvals)
// makes a SQLite file's directory; Open (explain --ledger) does not.
func TestCreateStoreMakesTheDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "toolgate", "ledger.db")
	_, err := OpenStore(ctx, "sqlite:"+path)
	require.Error(t, err)
	st, err := CreateStore(ctx, "sqlite:"+path)
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

// FuzzParseStore: a value that parses gives itself back.
func FuzzParseStore(f *testing.F) {
	for _, s := range []string{"memory", "sqlite:a.db", "postgres://h/db", "redis://x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseStore(in)
		if err != nil {
			if !strings.Contains(err.Error(), "want memory") {
				t.Fatalf("error without the accepted forms: %v", err)
			}
			return
		}
		if s.String() != in {
			t.Fatalf("%q parsed as %+v gives %q", in, s, s.String())
		}
	})
}
