package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The kinds of store a --ledger value names.
const (
	KindMemory   = "memory"
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
)

// StoreSpec is a parsed --ledger value (docs/contract.md §8): "memory",
// "sqlite:PATH" or a "postgres://" / "postgresql://" DSN. ParseStore is
// the one place the string is read; everything else asks a StoreSpec.
type StoreSpec struct {
	// Kind is KindMemory, KindSQLite or KindPostgres.
	Kind string
	// Path is a SQLite store's file; "" (the value "sqlite:") asks for the
	// default file, which the caller fills in (WithPath).
	Path string
	// DSN is a PostgreSQL store's connection string, as given.
	DSN string
}

// ParseStore reads a --ledger value. Its error names what is accepted and
// quotes the value; it holds no DSN unless the value was one.
func ParseStore(spec string) (StoreSpec, error) {
	switch {
	case spec == KindMemory:
		return StoreSpec{Kind: KindMemory}, nil
	case strings.HasPrefix(spec, "sqlite:"):
		return StoreSpec{Kind: KindSQLite, Path: strings.TrimPrefix(spec, "sqlite:")}, nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return StoreSpec{Kind: KindPostgres, DSN: spec}, nil
	}
	return StoreSpec{}, fmt.Errorf("want memory, sqlite:PATH or postgres://..., got %q", spec)
}

// String is the --ledger value s was read from.
func (s StoreSpec) String() string {
	switch s.Kind {
	case KindMemory:
		return KindMemory
	case KindSQLite:
		return "sqlite:" + s.Path
	}
	return s.DSN
}

// IsFile reports whether s is a SQLite store in a file on disk (not
// ":memory:" nor a "file:" URI): its path may be relative to something.
func (s StoreSpec) IsFile() bool {
	return s.Kind == KindSQLite && s.Path != "" && s.Path != ":memory:" && !strings.HasPrefix(s.Path, "file:")
}

// Open opens the store s names; a SQLite file's directory must exist.
func (s StoreSpec) Open(ctx context.Context) (Store, error) {
	switch s.Kind {
	case KindMemory:
		return NewMemoryStore(), nil
	case KindSQLite:
		if s.Path == "" {
			return nil, errors.New("ledger: sqlite: needs a file path (sqlite:PATH)")
		}
		return OpenSQLite(s.Path)
	case KindPostgres:
		return OpenPostgres(ctx, s.DSN)
	}
	return nil, fmt.Errorf("ledger: unknown store kind %q", s.Kind)
}

// Create is Open, creating a SQLite file's directory first (as serve and
// toolgate approvals do: the default file's state directory may not exist
// yet).
func (s StoreSpec) Create(ctx context.Context) (Store, error) {
	if s.IsFile() {
		if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
	}
	return s.Open(ctx)
}
