package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// approvalsTable holds approval requests, in SQLite and PostgreSQL alike.
// The partial unique index keeps at most one live request per key: the
// INSERT of CreateApproval is the atomic claim, and every later step is a
// single compare-and-swap UPDATE on (id, status).
const approvalsTable = "toolgate_approvals"

// approvalsDDL creates the table and its indexes; %s are the types of a
// 64-bit integer and of bytes.
func approvalsDDL(intType, bytesType string) []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS `+approvalsTable+` (
		id         TEXT NOT NULL PRIMARY KEY,
		subject    TEXT NOT NULL,
		tool       TEXT NOT NULL,
		args_hash  TEXT NOT NULL,
		arguments  %[2]s,
		reason     TEXT NOT NULL,
		approvers  TEXT NOT NULL,
		ttl_ns     %[1]s NOT NULL,
		status     TEXT NOT NULL,
		created_at %[1]s NOT NULL,
		expires_at %[1]s NOT NULL,
		decided_by TEXT NOT NULL DEFAULT '',
		decided_at %[1]s NOT NULL DEFAULT 0,
		note       TEXT NOT NULL DEFAULT ''
	)`, intType, bytesType),
		`CREATE INDEX IF NOT EXISTS toolgate_approvals_expiry ON ` + approvalsTable + ` (status, expires_at)`,
	}
}

// approvalsSourceDDL follows approvalsDDL once the source column exists
// (approvalsSourceColumn): the live key is (source, subject, tool,
// args_hash), so a subject of one identity source never holds or
// consumes another's request. The index of the key without source, of
// stores made before, is dropped.
var approvalsSourceDDL = []string{
	`DROP INDEX IF EXISTS toolgate_approvals_live`,
	`CREATE UNIQUE INDEX IF NOT EXISTS toolgate_approvals_live_by_source ON ` + approvalsTable +
		` (source, subject, tool, args_hash) WHERE status IN ('pending', 'approved', 'refused')`,
	`CREATE INDEX IF NOT EXISTS toolgate_approvals_requester ON ` + approvalsTable + ` (source, subject, status)`,
	`CREATE INDEX IF NOT EXISTS toolgate_approvals_listing ON ` + approvalsTable + ` (status, created_at, id)`,
}

// approvalsSourceColumn adds the source column to a table made before
// requests were keyed by source; its rows get SourceBeforeUpgrade.
const approvalsSourceColumn = `ALTER TABLE ` + approvalsTable + ` ADD COLUMN source TEXT NOT NULL DEFAULT '` + SourceBeforeUpgrade + `'`

const approvalColumns = `id, source, subject, tool, args_hash, arguments, reason, approvers, ttl_ns, status, created_at, expires_at, decided_by, decided_at, note`

// scanApproval reads one row of approvalColumns.
func scanApproval(scan func(dest ...any) error) (ApprovalRecord, error) {
	var (
		r                              ApprovalRecord
		approvers, status              string
		ttl, created, expires, decided int64
		args                           []byte
	)
	err := scan(&r.ID, &r.Key.Source, &r.Key.Subject, &r.Key.Tool, &r.Key.ArgsHash, &args, &r.Reason, &approvers, &ttl, &status,
		&created, &expires, &r.DecidedBy, &decided, &r.Note)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(approvers), &r.Approvers); err != nil {
		return r, fmt.Errorf("approval %s: approvers: %w", r.ID, err)
	}
	r.Arguments = args
	r.TTL, r.Status = time.Duration(ttl), ApprovalStatus(status)
	r.Created, r.Expires = time.Unix(0, created), time.Unix(0, expires)
	if decided != 0 {
		r.DecidedAt = time.Unix(0, decided)
	}
	return r, nil
}

func (s *sqlStore) CreateApproval(ctx context.Context, rec ApprovalRecord) (bool, error) {
	approvers, err := json.Marshal(rec.Approvers)
	if err != nil {
		return false, err
	}
	args := []byte(rec.Arguments)
	if args == nil {
		args = []byte("{}")
	}
	n, err := s.db.exec(ctx,
		`INSERT INTO `+approvalsTable+` (`+approvalColumns+`)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT DO NOTHING`,
		rec.ID, rec.Key.Source, rec.Key.Subject, rec.Key.Tool, rec.Key.ArgsHash, args, rec.Reason, string(approvers),
		int64(rec.TTL), string(rec.Status), rec.Created.UnixNano(), rec.Expires.UnixNano(), rec.DecidedBy, unixOrZero(rec.DecidedAt), rec.Note)
	if err != nil {
		return false, s.wrap("create approval", err)
	}
	return n == 1, nil
}

func (s *sqlStore) LiveApproval(ctx context.Context, key ApprovalKey) (ApprovalRecord, error) {
	return s.oneApproval(ctx, "live approval",
		`SELECT `+approvalColumns+` FROM `+approvalsTable+`
		 WHERE source = $1 AND subject = $2 AND tool = $3 AND args_hash = $4 AND status IN ('pending', 'approved', 'refused')`,
		key.Source, key.Subject, key.Tool, key.ArgsHash)
}

func (s *sqlStore) ApprovalByID(ctx context.Context, id string) (ApprovalRecord, error) {
	return s.oneApproval(ctx, "approval", `SELECT `+approvalColumns+` FROM `+approvalsTable+` WHERE id = $1`, id)
}

func (s *sqlStore) oneApproval(ctx context.Context, op, q string, args ...any) (ApprovalRecord, error) {
	var rec ApprovalRecord
	err := s.db.queryRows(ctx, q, func(scan func(dest ...any) error) error {
		var err error
		rec, err = scanApproval(scan)
		return err
	}, args...)
	if err != nil {
		return rec, s.wrap(op, err)
	}
	if rec.ID == "" {
		return rec, ErrApprovalNotFound
	}
	return rec, nil
}

func (s *sqlStore) PendingApprovals(ctx context.Context, now time.Time, q PendingQuery) ([]ApprovalRecord, error) {
	if q.Limit <= 0 || len(q.Roles) == 0 {
		return nil, nil
	}
	roles, err := json.Marshal(q.Roles)
	if err != nil {
		return nil, err
	}
	// The approvers column is a JSON array: the role filter is the
	// store's, so a page holds only requests the caller may decide.
	namesRole := `EXISTS (SELECT 1 FROM json_each(approvers) a WHERE a.value IN (SELECT value FROM json_each($3)))`
	if s.kind == "postgres" {
		namesRole = `jsonb_exists_any(approvers::jsonb, ARRAY(SELECT jsonb_array_elements_text($3::jsonb)))`
	}
	after, afterID := int64(-1<<63), ""
	if !q.After.IsZero() {
		after, afterID = q.After.Created.UnixNano(), q.After.ID
	}
	var out []ApprovalRecord
	err = s.db.queryRows(ctx,
		`SELECT `+approvalColumns+` FROM `+approvalsTable+`
		 WHERE status = 'pending' AND expires_at >= $1 AND subject <> $2 AND `+namesRole+`
		   AND (created_at > $4 OR (created_at = $4 AND id > $5))
		 ORDER BY created_at, id LIMIT $6`,
		func(scan func(dest ...any) error) error {
			rec, err := scanApproval(scan)
			out = append(out, rec)
			return err
		}, now.UnixNano(), q.NotSubject, string(roles), after, afterID, q.Limit)
	if err != nil {
		return nil, s.wrap("pending approvals", err)
	}
	return out, nil
}

func (s *sqlStore) CountPending(ctx context.Context, source, subject string, now time.Time) (int, error) {
	var n int64
	err := s.db.queryRow(ctx,
		`SELECT COUNT(*) FROM `+approvalsTable+` WHERE source = $1 AND subject = $2 AND status = 'pending' AND expires_at >= $3`,
		[]any{&n}, source, subject, now.UnixNano())
	if err != nil {
		return 0, s.wrap("count pending approvals", err)
	}
	return int(n), nil
}

func (s *sqlStore) TransitionApproval(ctx context.Context, from ApprovalStatus, to ApprovalRecord) (bool, error) {
	n, err := s.db.exec(ctx,
		`UPDATE `+approvalsTable+` SET status = $3, expires_at = $4, decided_by = $5, decided_at = $6, note = $7
		 WHERE id = $1 AND status = $2`,
		to.ID, string(from), string(to.Status), to.Expires.UnixNano(), to.DecidedBy, unixOrZero(to.DecidedAt), to.Note)
	if err != nil {
		return false, s.wrap("update approval", err)
	}
	return n == 1, nil
}

func (s *sqlStore) PruneApprovals(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	n, err := s.db.exec(ctx,
		`DELETE FROM `+approvalsTable+` WHERE id IN (
			SELECT id FROM `+approvalsTable+` WHERE expires_at < $1 LIMIT $2)`,
		before.UnixNano(), limit)
	if err != nil {
		return 0, s.wrap("prune approvals", err)
	}
	return int(n), nil
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
