package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
)

// memLimits are a MemoryStore's counted calls: per key (as storedKey
// keeps it), the times of the calls admitted under it (ascending) and
// until when each is kept. At most MemoryStore.maxLim keys are held.
type memLimits struct {
	keys map[string]*memLimitLog
	// sweptAt is when keys whose calls all expired were last dropped to
	// make room (room): at most once a second of the calls' clock, so
	// that calls refused at the cap do not each walk every key.
	sweptAt int64
}

type memLimitLog struct {
	ats     []int64   // ascending
	costs   []float64 // costs[i] is what the call at ats[i] weighed
	expires []int64   // expires[i] is when ats[i] may be pruned
	until   int64     // the latest of expires
}

// sweepEvery is how often, at most, a MemoryStore at its cap of limit
// keys looks for keys to drop.
const sweepEvery = time.Second

// room reports whether the store can hold keys, dropping, when it is
// short of room, the keys whose calls all expired before now; s.mu is
// held.
func (m *memLimits) room(keys []string, maxKeys int, now time.Time) bool {
	fresh := 0
	for _, k := range keys {
		if m.keys[k] == nil {
			fresh++
		}
	}
	if len(m.keys)+fresh <= maxKeys {
		return true
	}
	at := now.UnixNano()
	if m.sweptAt != 0 && at-m.sweptAt < int64(sweepEvery) && at >= m.sweptAt {
		return false
	}
	m.sweptAt = at
	for k, lg := range m.keys {
		if lg.until < at && !slices.Contains(keys, k) {
			delete(m.keys, k)
		}
	}
	return len(m.keys)+fresh <= maxKeys
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
	limits = storedKeys(limits)
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
	if !s.lim.room(keys, s.maxLim, now) {
		return false, nil, fmt.Errorf("%w: the memory store holds %d", ErrTooManyLimitKeys, len(s.lim.keys))
	}
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
		exp := now.Add(per[k]).UnixNano()
		lg.expires = slices.Insert(lg.expires, i, exp)
		lg.until = max(lg.until, exp)
	}
	return true, counts, nil
}

// PeekLimits implements LimitStore.
func (s *MemoryStore) PeekLimits(_ context.Context, limits []LimitRequest, now time.Time) (bool, []LimitCount, error) {
	limits = storedKeys(limits)
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
		lg.until = 0
		for i := range lg.ats {
			if lg.expires[i] < cut && n < limit {
				n++
				continue
			}
			lg.ats[kept], lg.costs[kept], lg.expires[kept] = lg.ats[i], lg.costs[i], lg.expires[i]
			lg.until = max(lg.until, lg.expires[i])
			kept++
		}
		lg.ats, lg.costs, lg.expires = lg.ats[:kept], lg.costs[:kept], lg.expires[:kept]
		if kept == 0 {
			delete(s.lim.keys, k)
		}
	}
	return n, nil
}
