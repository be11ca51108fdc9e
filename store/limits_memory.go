package store

import (
	"context"
	"slices"
	"sort"
	"time"
)

// memLimits are a MemoryStore's counted calls: per key, the times of the
// calls admitted under it (ascending) and until when each is kept.
type memLimits struct {
	keys map[string]*memLimitLog
}

type memLimitLog struct {
	ats     []int64 // ascending
	expires []int64 // expires[i] is when ats[i] may be pruned
}

// window returns the times of the calls within the last per, ascending.
func (lg *memLimitLog) window(now time.Time, per time.Duration) []int64 {
	if lg == nil {
		return nil
	}
	from := now.Add(-per).UnixNano()
	i := sort.Search(len(lg.ats), func(i int) bool { return lg.ats[i] > from })
	return lg.ats[i:]
}

// AdmitCall implements LimitStore.
func (s *MemoryStore) AdmitCall(_ context.Context, limits []LimitRequest, now time.Time) (bool, []LimitCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, counts := s.lim.count(limits, now)
	if !ok {
		return false, counts, nil
	}
	if s.lim.keys == nil {
		s.lim.keys = map[string]*memLimitLog{}
	}
	keys, per := keyLifetimes(limits)
	at := now.UnixNano()
	for _, k := range keys {
		lg := s.lim.keys[k]
		if lg == nil {
			lg = &memLimitLog{}
			s.lim.keys[k] = lg
		}
		i := sort.Search(len(lg.ats), func(i int) bool { return lg.ats[i] > at })
		lg.ats = slices.Insert(lg.ats, i, at)
		lg.expires = slices.Insert(lg.expires, i, now.Add(per[k]).UnixNano())
	}
	return true, counts, nil
}

// PeekLimits implements LimitStore.
func (s *MemoryStore) PeekLimits(_ context.Context, limits []LimitRequest, now time.Time) (bool, []LimitCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, counts := s.lim.count(limits, now)
	return ok, counts, nil
}

// count reads the counters of limits at now; s.mu is held.
func (m *memLimits) count(limits []LimitRequest, now time.Time) (bool, []LimitCount) {
	ok := true
	counts := make([]LimitCount, len(limits))
	for i, l := range limits {
		w := m.keys[l.Key].window(now, l.Per)
		counts[i] = LimitCount{Count: int64(len(w)), Wait: waitFor(w, l.Max, l.Per, now)}
		if counts[i].Count >= l.Max {
			ok = false
		}
	}
	return ok, counts
}

// PruneLimits implements LimitStore.
func (s *MemoryStore) PruneLimits(_ context.Context, now time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, cut := 0, now.UnixNano()
	for k, lg := range s.lim.keys {
		if n >= limit {
			break
		}
		kept := 0
		for i := range lg.ats {
			if lg.expires[i] < cut && n < limit {
				n++
				continue
			}
			lg.ats[kept], lg.expires[kept] = lg.ats[i], lg.expires[i]
			kept++
		}
		lg.ats, lg.expires = lg.ats[:kept], lg.expires[:kept]
		if kept == 0 {
			delete(s.lim.keys, k)
		}
	}
	return n, nil
}
