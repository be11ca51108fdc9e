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
	ats     []int64   // ascending
	costs   []float64 // costs[i] is what the call at ats[i] weighed
	expires []int64   // expires[i] is when ats[i] may be pruned
}

// window returns the times and costs of the calls within the last per,
// ascending.
func (lg *memLimitLog) window(now time.Time, per time.Duration) ([]int64, []float64) {
	if lg == nil {
		return nil, nil
	}
	from := now.Add(-per).UnixNano()
	i := sort.Search(len(lg.ats), func(i int) bool { return lg.ats[i] > from })
	return lg.ats[i:], lg.costs[i:]
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
	keys, per, cost := keyLifetimes(limits)
	at := now.UnixNano()
	for _, k := range keys {
		lg := s.lim.keys[k]
		if lg == nil {
			lg = &memLimitLog{}
			s.lim.keys[k] = lg
		}
		i := sort.Search(len(lg.ats), func(i int) bool { return lg.ats[i] > at })
		lg.ats = slices.Insert(lg.ats, i, at)
		lg.costs = slices.Insert(lg.costs, i, cost[k])
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
		ats, costs := m.keys[l.Key].window(now, l.Per)
		counts[i] = countOf(l, ats, costs, now)
		if counts[i].refuses(l) {
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
			lg.ats[kept], lg.costs[kept], lg.expires[kept] = lg.ats[i], lg.costs[i], lg.expires[i]
			kept++
		}
		lg.ats, lg.costs, lg.expires = lg.ats[:kept], lg.costs[:kept], lg.expires[:kept]
		if kept == 0 {
			delete(s.lim.keys, k)
		}
	}
	return n, nil
}
