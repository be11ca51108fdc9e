package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // pure Go: no cgo, so -race and static builds work
)

// SQLiteStore is a Store in an SQLite file: keys survive a restart, and
// processes on one host may share the file (WAL mode, busy timeout).
type SQLiteStore struct{ sqlStore }

// sqliteBusyTimeoutMS is how long a write waits for another connection's
// write lock before failing.
const sqliteBusyTimeoutMS = 10000

// OpenSQLite opens (creating if needed) the ledger in the SQLite file at
// path. The file's directory must exist. A file it creates is readable by
// its owner only (0600: results may hold anything a tool returned), and so
// are the -wal and -shm files SQLite creates beside it (SQLite gives them
// the database file's mode); an existing file's mode is left as it is.
func OpenSQLite(path string) (*SQLiteStore, error) {
	if path == "" || strings.ContainsAny(path, "?#") || path == ":memory:" {
		return nil, fmt.Errorf("ledger: sqlite: unusable path %q (a file path without '?' or '#')", path)
	}
	// Create the file ourselves, with its mode, before SQLite would create
	// it with 0644; O_EXCL leaves an existing file (and its mode) alone.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("ledger: sqlite: create %s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("ledger: sqlite: create %s: %w", path, err)
	}
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)",
		path, sqliteBusyTimeoutMS)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: sqlite: open %s: %w", path, err)
	}
	// Writes serialise on the file lock anyway; a few connections keep reads
	// from queueing behind them without piling up busy waiters.
	db.SetMaxOpenConns(4)
	for _, q := range schemaDDL("INTEGER", "BLOB") {
		if err == nil {
			_, err = db.Exec(q)
		}
	}
	if err == nil {
		err = sqliteAddColumn(db, approvalsTable, "source", approvalsSourceColumn)
	}
	if err == nil {
		err = sqliteAddColumn(db, limitsTable, "cost", fmt.Sprintf(limitsCostColumn, "REAL"))
	}
	for _, q := range approvalsSourceDDL {
		if err == nil {
			_, err = db.Exec(q)
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: sqlite: create table in %s: %w", path, err)
	}
	return &SQLiteStore{sqlStore{db: sqliteDB{db: db, stmts: &sqliteStmts{}}, kind: "sqlite"}}, nil
}

// sqliteAddColumn adds a column to a table of a file made before it
// (alter adds it). Another process may add it first: then the ALTER fails
// and the column is there.
func sqliteAddColumn(db *sql.DB, table, column, alter string) error {
	has := func() (bool, error) {
		var n int
		err := db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('`+table+`') WHERE name = ?`, column).Scan(&n)
		return n > 0, err
	}
	ok, err := has()
	if err != nil || ok {
		return err
	}
	if _, err := db.Exec(alter); err != nil {
		if ok, herr := has(); herr == nil && ok {
			return nil
		}
		return err
	}
	return nil
}

type sqliteDB struct {
	db    *sql.DB
	stmts *sqliteStmts
}

// sqliteStmts are the queries of queryRows prepared once, by text (the
// queries are constants): a history read on every call does not parse
// its query again. database/sql prepares each on a connection the first
// time it runs there; SQLite prepares it again by itself when the schema
// changes.
type sqliteStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns q prepared (rebound).
func (s *sqliteStmts) get(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.m[q]; st != nil {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, rebind(q))
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = map[string]*sql.Stmt{}
	}
	s.m[q] = st
	return st, nil
}

func (s *sqliteStmts) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, st := range s.m {
		errs = append(errs, st.Close())
	}
	s.m = nil
	return errors.Join(errs...)
}

// rebind turns $N into SQLite's numbered ?N.
func rebind(q string) string { return strings.ReplaceAll(q, "$", "?") }

func (d sqliteDB) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := d.db.ExecContext(ctx, rebind(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d sqliteDB) queryRow(ctx context.Context, q string, dest []any, args ...any) error {
	return scanOne(d.db.QueryRowContext(ctx, rebind(q), args...), dest, sql.ErrNoRows)
}

func (d sqliteDB) queryRows(ctx context.Context, q string, row func(scan func(dest ...any) error) error, args ...any) error {
	st, err := d.stmts.get(ctx, d.db, q)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, row)
}

// atomically runs fn holding SQLite's write lock (BEGIN IMMEDIATE) on one
// connection: it serialises with every other writer of the file, in this
// process or another, so keys need no lock of their own.
func (d sqliteDB) atomically(ctx context.Context, _ []string, fn func(q sqlQuerier) error) (err error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// Not ctx: a cancelled call must still end its transaction.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := fn(sqliteConn{conn}); err != nil {
		return err
	}
	_, err = conn.ExecContext(context.WithoutCancel(ctx), "COMMIT")
	return err
}

type sqliteConn struct{ c *sql.Conn }

func (c sqliteConn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := c.c.ExecContext(ctx, rebind(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c sqliteConn) queryRow(ctx context.Context, q string, dest []any, args ...any) error {
	return scanOne(c.c.QueryRowContext(ctx, rebind(q), args...), dest, sql.ErrNoRows)
}

func (d sqliteDB) close() error { return errors.Join(d.stmts.close(), d.db.Close()) }
