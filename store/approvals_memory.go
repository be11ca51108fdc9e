package store

import (
	"context"
	"slices"
	"sort"
	"time"
)

// memApprovals is the approval half of a MemoryStore.
type memApprovals struct {
	byID map[string]*ApprovalRecord
	live map[ApprovalKey]string
}

func (s *MemoryStore) approvals() *memApprovals {
	if s.appr.byID == nil {
		s.appr.byID = map[string]*ApprovalRecord{}
		s.appr.live = map[ApprovalKey]string{}
	}
	return &s.appr
}

func copyRecord(r *ApprovalRecord) ApprovalRecord {
	c := *r
	c.Arguments = append([]byte(nil), r.Arguments...)
	c.Approvers = slices.Clone(r.Approvers)
	return c
}

// CreateApproval implements ApprovalStore.
func (s *MemoryStore) CreateApproval(_ context.Context, rec ApprovalRecord) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.approvals()
	if _, ok := a.live[rec.Key]; ok {
		return false, nil
	}
	if _, ok := a.byID[rec.ID]; ok {
		return false, nil
	}
	c := copyRecord(&rec)
	a.byID[rec.ID] = &c
	if c.Status.Live() {
		a.live[rec.Key] = rec.ID
	}
	return true, nil
}

// LiveApproval implements ApprovalStore.
func (s *MemoryStore) LiveApproval(_ context.Context, key ApprovalKey) (ApprovalRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.approvals()
	id, ok := a.live[key]
	if !ok {
		return ApprovalRecord{}, ErrApprovalNotFound
	}
	return copyRecord(a.byID[id]), nil
}

// ApprovalByID implements ApprovalStore.
func (s *MemoryStore) ApprovalByID(_ context.Context, id string) (ApprovalRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.approvals().byID[id]
	if !ok {
		return ApprovalRecord{}, ErrApprovalNotFound
	}
	return copyRecord(r), nil
}

// PendingApprovals implements ApprovalStore.
func (s *MemoryStore) PendingApprovals(_ context.Context, now time.Time, q PendingQuery) ([]ApprovalRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*ApprovalRecord
	for _, r := range s.approvals().byID {
		if r.Status == ApprovalPending && !now.After(r.Expires) && r.Key.Subject != q.NotSubject &&
			namesAny(r.Approvers, q.Roles) && (q.After.IsZero() || before(q.After, r)) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return before(Cursor{Created: out[i].Created, ID: out[i].ID}, out[j])
	})
	if len(out) > q.Limit {
		out = out[:max(q.Limit, 0)]
	}
	recs := make([]ApprovalRecord, len(out))
	for i, r := range out {
		recs[i] = copyRecord(r)
	}
	return recs, nil
}

// before reports whether c comes before r in the listing's order.
func before(c Cursor, r *ApprovalRecord) bool {
	if !c.Created.Equal(r.Created) {
		return c.Created.Before(r.Created)
	}
	return c.ID < r.ID
}

func namesAny(approvers, roles []string) bool {
	for _, r := range roles {
		if slices.Contains(approvers, r) {
			return true
		}
	}
	return false
}

// CountPending implements ApprovalStore.
func (s *MemoryStore) CountPending(_ context.Context, source, subject string, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.approvals().byID {
		if r.Status == ApprovalPending && !now.After(r.Expires) && r.Key.Source == source && r.Key.Subject == subject {
			n++
		}
	}
	return n, nil
}

// TransitionApproval implements ApprovalStore.
func (s *MemoryStore) TransitionApproval(_ context.Context, from ApprovalStatus, to ApprovalRecord) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.approvals()
	r, ok := a.byID[to.ID]
	if !ok || r.Status != from {
		return false, nil
	}
	r.Status, r.Expires, r.DecidedBy, r.DecidedAt, r.Note = to.Status, to.Expires, to.DecidedBy, to.DecidedAt, to.Note
	if !r.Status.Live() && a.live[r.Key] == r.ID {
		delete(a.live, r.Key)
	}
	return true, nil
}

// PruneApprovals implements ApprovalStore.
func (s *MemoryStore) PruneApprovals(_ context.Context, before time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.approvals()
	n := 0
	for id, r := range a.byID {
		if n >= limit {
			break
		}
		if r.Expires.Before(before) {
			delete(a.byID, id)
			if a.live[r.Key] == id {
				delete(a.live, r.Key)
			}
			n++
		}
	}
	return n, nil
}
