package store

import (
	"context"
	"fmt"
	"time"
)

// limitsTable holds the calls counted under rate limits, in SQLite and
// PostgreSQL alike: one row per admitted call and key. A call is decided
// in one transaction that first takes a lock per key (PostgreSQL: an
// advisory transaction lock per key, in key order; SQLite: the database's
// write lock, BEGIN IMMEDIATE), then counts and inserts: of concurrent
// calls under one key exactly as many are admitted as the limit has room
// for, across every process sharing the database.
const limitsTable = "toolgate_limits"

// limitsDDL creates the table and its indexes; %s is the type of a 64-bit
// integer. The cost column (limitsCostColumn) is added after it, also to
// a table made before budgets.
func limitsDDL(intType string) []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS `+limitsTable+` (
		id         TEXT NOT NULL PRIMARY KEY,
		limit_key  TEXT NOT NULL,
		at         %[1]s NOT NULL,
		expires_at %[1]s NOT NULL
	)`, intType),
		`CREATE INDEX IF NOT EXISTS toolgate_limits_window ON ` + limitsTable + ` (limit_key, at)`,
		`CREATE INDEX IF NOT EXISTS toolgate_limits_expiry ON ` + limitsTable + ` (expires_at)`,
	}
}

// limitsCostColumn adds what each counted call weighed (docs/contract.md
// §20); calls counted before it, or by a replica that predates it, weigh
// 1. %s is the type of a float64.
const limitsCostColumn = `ALTER TABLE ` + limitsTable + ` ADD COLUMN cost %s NOT NULL DEFAULT 1`

func (s *sqlStore) AdmitCall(ctx context.Context, limits []LimitRequest, now time.Time) (bool, []LimitCount, error) {
	limits = storedKeys(limits)
	keys, per, cost := keyLifetimes(limits)
	var (
		ok     bool
		counts []LimitCount
	)
	err := s.db.atomically(ctx, keys, func(q sqlQuerier) error {
		var err error
		ok, counts, err = countLimits(ctx, q, limits, now)
		if err != nil || !ok {
			return err
		}
		for _, k := range keys {
			_, err := q.exec(ctx,
				`INSERT INTO `+limitsTable+` (id, limit_key, at, expires_at, cost) VALUES ($1, $2, $3, $4, $5)`,
				newToken(), k, now.UnixNano(), now.Add(per[k]).UnixNano(), cost[k])
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, nil, s.wrap("admit call", err)
	}
	return ok, counts, nil
}

func (s *sqlStore) PeekLimits(ctx context.Context, limits []LimitRequest, now time.Time) (bool, []LimitCount, error) {
	ok, counts, err := countLimits(ctx, s.db, storedKeys(limits), now)
	if err != nil {
		return false, nil, s.wrap("peek limits", err)
	}
	return ok, counts, nil
}

// countLimits reads the counter of each limit at now.
func countLimits(ctx context.Context, q sqlQuerier, limits []LimitRequest, now time.Time) (bool, []LimitCount, error) {
	ok := true
	counts := make([]LimitCount, len(limits))
	for i, l := range limits {
		from := now.Add(-l.Per).UnixNano()
		c := &counts[i]
		if err := q.queryRow(ctx, `SELECT count(*), COALESCE(SUM(cost), 0) FROM `+limitsTable+` WHERE limit_key = $1 AND at > $2`,
			[]any{&c.Count, &c.Used}, l.Key, from); err != nil {
			return false, nil, err
		}
		cost := l.cost()
		if fits(c.Used, cost, l.Max) {
			continue
		}
		ok = false
		if !fits(0, cost, l.Max) {
			c.Never = true
			continue
		}
		// The call is admitted once the oldest calls whose costs add up to
		// what is too much have left the window: the first whose running
		// sum reaches it (for costs of 1: the (n-max+1)th oldest).
		var at int64
		need := c.Used + cost - l.Max
		if err := q.queryRow(ctx,
			`SELECT at FROM (SELECT at, SUM(cost) OVER (ORDER BY at, id ROWS UNBOUNDED PRECEDING) AS gone
				FROM `+limitsTable+` WHERE limit_key = $1 AND at > $2) w
			WHERE gone >= $3 ORDER BY at LIMIT 1`,
			[]any{&at}, l.Key, from, need-l.Max*1e-12); err != nil {
			return false, nil, err
		}
		c.Wait = time.Unix(0, at).Add(l.Per).Sub(now)
	}
	return ok, counts, nil
}

func (s *sqlStore) PruneLimits(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	n, err := s.db.exec(ctx,
		`DELETE FROM `+limitsTable+` WHERE id IN (
			SELECT id FROM `+limitsTable+` WHERE expires_at < $1 LIMIT $2)`,
		now.UnixNano(), limit)
	if err != nil {
		return 0, s.wrap("prune limits", err)
	}
	return int(n), nil
}
