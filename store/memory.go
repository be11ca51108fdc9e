package store

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Defaults of the memory store's caps.
const (
	// DefaultMemoryMaxKeys caps the completed keys a MemoryStore keeps.
	DefaultMemoryMaxKeys = 100_000
	// DefaultMemoryMaxBytes caps the bytes of stored results a MemoryStore
	// keeps.
	DefaultMemoryMaxBytes = 64 << 20
	// DefaultMemoryMaxLimitKeys caps the distinct rate-limit keys a
	// MemoryStore counts under at once (each held in at most a few hundred
	// bytes: longer keys are kept hashed).
	DefaultMemoryMaxLimitKeys = 100_000
)

// MemoryStore is a Store in process memory: keys last at most as long as
// the process, and completed keys at most their retention (expired on read,
// removed by Prune).
//
// It is bounded even within the retention: past MaxKeys completed keys or
// MaxBytes of stored results, completing a key first drops the oldest
// completed keys (in the order they completed) until both hold again; a key
// dropped so is free again, and a retry with it runs the call again. The
// key just completed is never dropped (a single result larger than
// MaxBytes stays alone), and running claims are never dropped: they last
// as long as their calls. The zero value is not usable; call
// NewMemoryStore.
type MemoryStore struct {
	mu       sync.Mutex
	rows     map[Key]*memRow
	done     list.List // of *memRow, completed, in the order they completed
	bytes    int       // stored result bytes of the completed rows
	maxKeys  int
	maxBytes int
	maxLim   int          // distinct limit keys (MemoryMaxLimitKeys)
	appr     memApprovals // approval requests (approvals_memory.go)
	lim      memLimits    // calls counted under rate limits (limits_memory.go)
	hist     memHistory   // callers' histories (history_memory.go)
}

type memRow struct {
	key       Key
	argsHash  string
	completed bool
	token     string
	// at is when the key was claimed (running) or completed.
	at     time.Time
	result []byte
	elem   *list.Element // in done, once completed
}

// MemoryOption configures a MemoryStore.
type MemoryOption func(*MemoryStore)

// MemoryMaxKeys caps the completed keys kept (DefaultMemoryMaxKeys; n <= 0
// keeps the default).
func MemoryMaxKeys(n int) MemoryOption {
	return func(s *MemoryStore) {
		if n > 0 {
			s.maxKeys = n
		}
	}
}

// MemoryMaxBytes caps the bytes of stored results kept
// (DefaultMemoryMaxBytes; n <= 0 keeps the default).
func MemoryMaxBytes(n int) MemoryOption {
	return func(s *MemoryStore) {
		if n > 0 {
			s.maxBytes = n
		}
	}
}

// MemoryMaxLimitKeys caps the distinct keys the store counts rate-limited
// calls under (DefaultMemoryMaxLimitKeys; n <= 0 keeps the default). A
// call that needs a key beyond the cap, once the keys whose windows ended
// are dropped, fails with ErrTooManyLimitKeys.
func MemoryMaxLimitKeys(n int) MemoryOption {
	return func(s *MemoryStore) {
		if n > 0 {
			s.maxLim = n
		}
	}
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	s := &MemoryStore{rows: map[Key]*memRow{}, maxKeys: DefaultMemoryMaxKeys, maxBytes: DefaultMemoryMaxBytes, maxLim: DefaultMemoryMaxLimitKeys}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Claim implements Store.
func (s *MemoryStore) Claim(_ context.Context, key Key, argsHash string, now time.Time, lt Lifetimes) (ClaimResult, error) {
	lt = lt.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key]
	if ok && r.completed && expired(r.at, now, lt.Retention) {
		s.drop(r) // as if absent
		ok = false
	}
	switch {
	case !ok:
		r = &memRow{key: key, argsHash: argsHash}
		s.rows[key] = r
	case r.argsHash != argsHash:
		return ClaimResult{State: Conflict}, nil
	case r.completed:
		return ClaimResult{State: Completed, Result: append([]byte(nil), r.result...)}, nil
	case !expired(r.at, now, lt.Lease):
		return ClaimResult{State: Running}, nil
	}
	r.token, r.at = newToken(), now
	return ClaimResult{State: Claimed, Token: r.token}, nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(_ context.Context, key Key, token string, result []byte, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key]
	if !ok || r.completed || r.token != token {
		return ErrClaimLost
	}
	r.completed, r.at, r.result = true, now, append([]byte(nil), result...)
	r.elem = s.done.PushBack(r)
	s.bytes += len(r.result)
	for s.done.Len() > s.maxKeys || s.bytes > s.maxBytes {
		oldest := s.done.Front().Value.(*memRow)
		if oldest == r {
			break
		}
		s.drop(oldest)
	}
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

// Prune implements Store: it drops up to limit expired completed keys,
// oldest completion first, and stops at the first that has not expired.
// Running claims are left alone (they end with their calls).
func (s *MemoryStore) Prune(_ context.Context, now time.Time, lt Lifetimes, limit int) (int, error) {
	lt = lt.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < limit && s.done.Len() > 0 {
		oldest := s.done.Front().Value.(*memRow)
		if !expired(oldest.at, now, lt.Retention) {
			break
		}
		s.drop(oldest)
		n++
	}
	return n, nil
}

// drop forgets a row; s.mu is held.
func (s *MemoryStore) drop(r *memRow) {
	delete(s.rows, r.key)
	if r.elem != nil {
		s.done.Remove(r.elem)
		s.bytes -= len(r.result)
		r.elem = nil
	}
}

// Close implements Store; the keys are kept until the store is dropped.
func (s *MemoryStore) Close() error { return nil }

// Len is how many keys s holds, running or completed.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows)
}
