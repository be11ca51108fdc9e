package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresStore is a Store in a PostgreSQL database, shared by every replica
// that opens it.
type PostgresStore struct{ sqlStore }

// OpenPostgres connects to the database at dsn (a pgx connection string)
// and creates the ledger's table if it is missing. Replicas starting at once
// create it once: the creation holds an advisory lock.
func OpenPostgres(ctx context.Context, dsn string) (*PostgresStore, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: postgres: %w", err)
	}
	if err := createPostgresTable(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ledger: postgres: create table: %w", err)
	}
	return &PostgresStore{sqlStore{db: pgDB{pool}, kind: "postgres"}}, nil
}

func createPostgresTable(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// CREATE TABLE IF NOT EXISTS is not safe against itself: two sessions
	// can both find the table missing and one then fails on pg_type.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('`+table+`'))`); err != nil {
		return err
	}
	for _, q := range schemaDDL("BIGINT", "BYTEA") {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	// Under the advisory lock: one replica adds the column.
	if _, err := tx.Exec(ctx, strings.Replace(approvalsSourceColumn, "ADD COLUMN", "ADD COLUMN IF NOT EXISTS", 1)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, strings.Replace(fmt.Sprintf(limitsCostColumn, "DOUBLE PRECISION"), "ADD COLUMN", "ADD COLUMN IF NOT EXISTS", 1)); err != nil {
		return err
	}
	for _, q := range approvalsSourceDDL {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

type pgDB struct{ pool *pgxpool.Pool }

func (d pgDB) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := d.pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (d pgDB) queryRow(ctx context.Context, q string, dest []any, args ...any) error {
	return scanOne(d.pool.QueryRow(ctx, q, args...), dest, pgx.ErrNoRows)
}

func (d pgDB) queryRows(ctx context.Context, q string, row func(scan func(dest ...any) error) error, args ...any) error {
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, row)
}

func (d pgDB) atomically(ctx context.Context, keys []string, fn func(q sqlQuerier) error) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	for _, k := range keys {
		// A 64-bit hash of the key: two keys that collide only wait for
		// each other.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, k); err != nil {
			return err
		}
	}
	if err := fn(pgTx{tx}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

type pgTx struct{ tx pgx.Tx }

func (t pgTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t pgTx) queryRow(ctx context.Context, q string, dest []any, args ...any) error {
	return scanOne(t.tx.QueryRow(ctx, q, args...), dest, pgx.ErrNoRows)
}

func (d pgDB) close() error {
	d.pool.Close()
	return nil
}
