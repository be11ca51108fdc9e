package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The SQL stores (SQLite, PostgreSQL) share one algorithm built from
// single-statement compare-and-swap steps, each atomic on its own, so no
// transaction has to be held across a round trip and none can deadlock:
//
//  1. INSERT ... ON CONFLICT DO NOTHING: the one claim that inserts holds the
//     key; every other sees 0 rows affected.
//  2. SELECT the row and decide: conflict, completed, running.
//  3. A running claim past its lease is taken over with an UPDATE that
//     matches the old token: of concurrent takeovers exactly one matches.
//
// A row that vanishes between 1 and 2 (released, pruned) or a lost takeover
// race starts again from 1. A completed row past its retention found in 2
// is deleted (matching its completion time, so only that row) and the claim
// starts again from 1: an expired key is as if absent.
//
// claimed_at is the time of the row's state: when it was claimed while
// running, when it completed once completed. (An older file whose completed
// rows kept their claim time only expires those a little earlier.)

// table is the ledger's table, in SQLite and PostgreSQL alike.
const table = "toolgate_ledger"

// expiryIndex serves Prune's scan by state and time.
const expiryIndex = `CREATE INDEX IF NOT EXISTS toolgate_ledger_expiry ON ` + table + ` (state, claimed_at)`

// schemaDDL creates the store's tables and indexes where missing, in
// order, with the database's names for a 64-bit integer and a byte string.
func schemaDDL(intType, bytesType string) []string {
	ledger := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS `+table+` (
		subject    TEXT NOT NULL,
		tool       TEXT NOT NULL,
		idem_key   TEXT NOT NULL,
		args_hash  TEXT NOT NULL,
		state      TEXT NOT NULL,
		token      TEXT NOT NULL,
		claimed_at %[1]s NOT NULL,
		result     %[2]s,
		PRIMARY KEY (subject, tool, idem_key)
	)`, intType, bytesType)
	return append(append([]string{ledger, expiryIndex}, approvalsDDL(intType, bytesType)...), append(limitsDDL(intType), historyDDL(intType)...)...)
}

const (
	stateRunning   = "running"
	stateCompleted = "completed"
)

// maxClaimRounds bounds the retries of one Claim; each lost round means
// another claim made progress.
const maxClaimRounds = 16

var errNoRows = errors.New("no rows")

// sqlQuerier runs statements, on a database or inside a transaction.
// Queries are written with PostgreSQL's $N placeholders.
type sqlQuerier interface {
	exec(ctx context.Context, q string, args ...any) (rowsAffected int64, err error)
	// queryRow scans one row into dest; errNoRows when there is none.
	queryRow(ctx context.Context, q string, dest []any, args ...any) error
}

// scanOne scans the one row of a result into dest: errNoRows when there
// is none, which the driver tells by its sentinel noRows.
func scanOne(row interface{ Scan(dest ...any) error }, dest []any, noRows error) error {
	err := row.Scan(dest...)
	if errors.Is(err, noRows) {
		return errNoRows
	}
	return err
}

// eachRow calls row once per row of rows, with its scan, and returns the
// first error: row's, or the driver's once the rows end.
func eachRow(rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}, row func(scan func(dest ...any) error) error) error {
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// sqlDB is what the shared algorithm needs of a database.
type sqlDB interface {
	sqlQuerier
	// atomically runs fn in one transaction that holds a lock on each of
	// keys (sorted) until it ends: committed when fn returns nil, rolled
	// back otherwise. Two transactions with a key in common never run at
	// once.
	atomically(ctx context.Context, keys []string, fn func(q sqlQuerier) error) error
	// queryRows calls row once per row of the result, with its scan.
	queryRows(ctx context.Context, q string, row func(scan func(dest ...any) error) error, args ...any) error
	close() error
}

type sqlStore struct {
	db   sqlDB
	kind string // for error messages
}

func (s *sqlStore) Claim(ctx context.Context, key Key, argsHash string, now time.Time, lt Lifetimes) (ClaimResult, error) {
	lt = lt.withDefaults()
	for range maxClaimRounds {
		token := newToken()
		n, err := s.db.exec(ctx,
			`INSERT INTO `+table+` (subject, tool, idem_key, args_hash, state, token, claimed_at)
			 VALUES ($1, $2, $3, $4, '`+stateRunning+`', $5, $6) ON CONFLICT DO NOTHING`,
			key.Subject, key.Tool, key.ID, argsHash, token, now.UnixNano())
		if err != nil {
			return ClaimResult{}, s.wrap("claim", err)
		}
		if n == 1 {
			return ClaimResult{State: Claimed, Token: token}, nil
		}
		var (
			hash, state, old string
			claimedAt        int64
			result           []byte
		)
		err = s.db.queryRow(ctx,
			`SELECT args_hash, state, token, claimed_at, result FROM `+table+`
			 WHERE subject = $1 AND tool = $2 AND idem_key = $3`,
			[]any{&hash, &state, &old, &claimedAt, &result},
			key.Subject, key.Tool, key.ID)
		if errors.Is(err, errNoRows) {
			continue // released since the insert: claim again
		}
		if err != nil {
			return ClaimResult{}, s.wrap("claim", err)
		}
		if state == stateCompleted && expired(time.Unix(0, claimedAt), now, lt.Retention) {
			_, err = s.db.exec(ctx,
				`DELETE FROM `+table+`
				 WHERE subject = $1 AND tool = $2 AND idem_key = $3 AND state = '`+stateCompleted+`' AND claimed_at = $4`,
				key.Subject, key.Tool, key.ID, claimedAt)
			if err != nil {
				return ClaimResult{}, s.wrap("expire", err)
			}
			continue // as if absent: claim again
		}
		switch {
		case hash != argsHash:
			return ClaimResult{State: Conflict}, nil
		case state == stateCompleted:
			if result == nil {
				result = []byte{}
			}
			return ClaimResult{State: Completed, Result: result}, nil
		case !expired(time.Unix(0, claimedAt), now, lt.Lease):
			return ClaimResult{State: Running}, nil
		}
		n, err = s.db.exec(ctx,
			`UPDATE `+table+` SET token = $4, claimed_at = $5
			 WHERE subject = $1 AND tool = $2 AND idem_key = $3 AND state = '`+stateRunning+`' AND token = $6`,
			key.Subject, key.Tool, key.ID, token, now.UnixNano(), old)
		if err != nil {
			return ClaimResult{}, s.wrap("take over", err)
		}
		if n == 1 {
			return ClaimResult{State: Claimed, Token: token}, nil
		}
		// Another claim took it over, completed or released it first.
	}
	return ClaimResult{}, fmt.Errorf("ledger: %s: claim: no decision after %d rounds of contention", s.kind, maxClaimRounds)
}

func (s *sqlStore) Complete(ctx context.Context, key Key, token string, result []byte, now time.Time) error {
	if result == nil {
		result = []byte{}
	}
	n, err := s.db.exec(ctx,
		`UPDATE `+table+` SET state = '`+stateCompleted+`', result = $5, claimed_at = $6
		 WHERE subject = $1 AND tool = $2 AND idem_key = $3 AND state = '`+stateRunning+`' AND token = $4`,
		key.Subject, key.Tool, key.ID, token, result, now.UnixNano())
	if err != nil {
		return s.wrap("complete", err)
	}
	if n == 0 {
		return ErrClaimLost
	}
	return nil
}

func (s *sqlStore) Release(ctx context.Context, key Key, token string) error {
	n, err := s.db.exec(ctx,
		`DELETE FROM `+table+`
		 WHERE subject = $1 AND tool = $2 AND idem_key = $3 AND state = '`+stateRunning+`' AND token = $4`,
		key.Subject, key.Tool, key.ID, token)
	if err != nil {
		return s.wrap("release", err)
	}
	if n == 0 {
		return ErrClaimLost
	}
	return nil
}

// Prune deletes at most limit rows in one statement: completed rows past
// their retention, and running rows older than both lease and retention
// (their holder is gone: any claim could take them over anyway).
func (s *sqlStore) Prune(ctx context.Context, now time.Time, lt Lifetimes, limit int) (int, error) {
	lt = lt.withDefaults()
	if limit <= 0 {
		return 0, nil
	}
	stale := max(lt.Lease, lt.Retention)
	n, err := s.db.exec(ctx,
		`DELETE FROM `+table+` WHERE (subject, tool, idem_key) IN (
			SELECT subject, tool, idem_key FROM `+table+`
			WHERE (state = '`+stateCompleted+`' AND claimed_at < $1) OR (state = '`+stateRunning+`' AND claimed_at < $2)
			LIMIT $3)`,
		now.Add(-lt.Retention).UnixNano(), now.Add(-stale).UnixNano(), limit)
	if err != nil {
		return 0, s.wrap("prune", err)
	}
	return int(n), nil
}

func (s *sqlStore) Close() error { return s.db.close() }

func (s *sqlStore) wrap(op string, err error) error {
	return fmt.Errorf("ledger: %s: %s: %w", s.kind, op, err)
}
