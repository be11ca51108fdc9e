package ledger

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is a Store in process memory: keys last as long as the
// process. The zero value is not usable; call NewMemoryStore.
type MemoryStore struct {
	mu   sync.Mutex
	rows map[Key]*memRow
}

type memRow struct {
	argsHash  string
	completed bool
	token     string
	claimedAt time.Time
	result    []byte
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{rows: map[Key]*memRow{}} }

// Claim implements Store.
func (s *MemoryStore) Claim(_ context.Context, key Key, argsHash string, now time.Time, lease time.Duration) (ClaimResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key]
	switch {
	case !ok:
		r = &memRow{argsHash: argsHash}
		s.rows[key] = r
	case r.argsHash != argsHash:
		return ClaimResult{State: Conflict}, nil
	case r.completed:
		return ClaimResult{State: Completed, Result: append([]byte(nil), r.result...)}, nil
	case !expired(r.claimedAt, now, lease):
		return ClaimResult{State: Running}, nil
	}
	r.token, r.claimedAt = newToken(), now
	return ClaimResult{State: Claimed, Token: r.token}, nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(_ context.Context, key Key, token string, result []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key]
	if !ok || r.completed || r.token != token {
		return ErrClaimLost
	}
	r.completed, r.result = true, append([]byte(nil), result...)
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(_ context.Context, key Key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key]
	if !ok || r.completed || r.token != token {
		return ErrClaimLost
	}
	delete(s.rows, key)
	return nil
}

// Close implements Store; the keys are kept until the store is dropped.
func (s *MemoryStore) Close() error { return nil }
