package store

import (
	"context"
	"fmt"
	"time"
)

// historyTable holds callers' histories, in SQLite and PostgreSQL alike:
// one row per recorded call.
const historyTable = "toolgate_history"

// historyDDL creates the table and its indexes; %s is the type of a
// 64-bit integer.
func historyDDL(intType string) []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS `+historyTable+` (
		id         TEXT NOT NULL PRIMARY KEY,
		caller     TEXT NOT NULL,
		tool       TEXT NOT NULL,
		at         %[1]s NOT NULL,
		outcome    TEXT NOT NULL,
		arguments  TEXT NOT NULL,
		expires_at %[1]s NOT NULL
	)`, intType),
		// A caller's entries in the order a read returns them (newest
		// first, id breaking ties) and the cap drops them: neither sorts.
		`DROP INDEX IF EXISTS toolgate_history_caller`,
		`CREATE INDEX IF NOT EXISTS toolgate_history_caller_at ON ` + historyTable + ` (caller, at, id)`,
		`CREATE INDEX IF NOT EXISTS toolgate_history_expiry ON ` + historyTable + ` (expires_at)`,
	}
}

// capHistoryQuery removes a caller's entries past a number, the oldest.
const capHistoryQuery = `DELETE FROM ` + historyTable + ` WHERE caller = $1 AND id IN (
	SELECT id FROM ` + historyTable + ` WHERE caller = $1 ORDER BY at DESC, id DESC LIMIT 1000000 OFFSET $2)`

func (s *sqlStore) AppendHistory(ctx context.Context, k HistoryKey, e HistoryEntry, keep time.Duration, cap int) error {
	key := k.stored()
	err := s.db.atomically(ctx, []string{"history/" + key}, func(q sqlQuerier) error {
		if _, err := q.exec(ctx,
			`INSERT INTO `+historyTable+` (id, caller, tool, at, outcome, arguments, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			newToken(), key, e.Tool, e.At.UnixNano(), e.Outcome, string(e.Arguments), e.At.Add(min(keep, maxCountLife)).UnixNano()); err != nil {
			return err
		}
		if cap <= 0 {
			return nil
		}
		_, err := q.exec(ctx, capHistoryQuery, key, cap)
		return err
	})
	if err != nil {
		return s.wrap("append history", err)
	}
	return nil
}

// readHistoryQuery reads a caller's entries after a time, newest first, at
// most a number: along the index on (caller, at, id), without sorting.
const readHistoryQuery = `SELECT tool, at, outcome, arguments FROM ` + historyTable +
	` WHERE caller = $1 AND at > $2 ORDER BY at DESC, id DESC LIMIT $3`

func (s *sqlStore) ReadHistory(ctx context.Context, k HistoryKey, since time.Time, max int) ([]HistoryEntry, error) {
	out := []HistoryEntry{}
	var (
		tool, outcome, args string
		at                  int64
	)
	dest := []any{&tool, &at, &outcome, &args}
	err := s.db.queryRows(ctx, readHistoryQuery,
		func(scan func(dest ...any) error) error {
			if err := scan(dest...); err != nil {
				return err
			}
			out = append(out, HistoryEntry{Tool: tool, At: time.Unix(0, at).UTC(), Outcome: outcome, Arguments: []byte(args)})
			return nil
		}, k.stored(), since.UnixNano(), max)
	if err != nil {
		return nil, s.wrap("read history", err)
	}
	return out, nil
}

func (s *sqlStore) PruneHistory(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	n, err := s.db.exec(ctx,
		`DELETE FROM `+historyTable+` WHERE id IN (
			SELECT id FROM `+historyTable+` WHERE expires_at < $1 LIMIT $2)`,
		now.UnixNano(), limit)
	if err != nil {
		return 0, s.wrap("prune history", err)
	}
	return int(n), nil
}
