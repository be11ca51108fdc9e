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
		`CREATE INDEX IF NOT EXISTS toolgate_history_caller ON ` + historyTable + ` (caller, at)`,
		`CREATE INDEX IF NOT EXISTS toolgate_history_expiry ON ` + historyTable + ` (expires_at)`,
	}
}

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
		_, err := q.exec(ctx,
			`DELETE FROM `+historyTable+` WHERE caller = $1 AND id IN (
				SELECT id FROM `+historyTable+` WHERE caller = $1 ORDER BY at DESC, id DESC LIMIT 1000000 OFFSET $2)`,
			key, cap)
		return err
	})
	if err != nil {
		return s.wrap("append history", err)
	}
	return nil
}

func (s *sqlStore) ReadHistory(ctx context.Context, k HistoryKey, since time.Time, max int) ([]HistoryEntry, error) {
	var out []HistoryEntry
	err := s.db.queryRows(ctx,
		`SELECT tool, at, outcome, arguments FROM `+historyTable+` WHERE caller = $1 AND at > $2 ORDER BY at DESC, id DESC LIMIT $3`,
		func(scan func(dest ...any) error) error {
			var (
				e    HistoryEntry
				at   int64
				args string
			)
			if err := scan(&e.Tool, &at, &e.Outcome, &args); err != nil {
				return err
			}
			e.At, e.Arguments = time.Unix(0, at).UTC(), []byte(args)
			out = append(out, e)
			return nil
		}, k.stored(), since.UnixNano(), max)
	if err != nil {
		return nil, s.wrap("read history", err)
	}
	if out == nil {
		out = []HistoryEntry{}
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
