package store

import (
	"context"
	"slices"
	"sort"
	"time"
)

// memHistory are a MemoryStore's callers' histories: per caller, the
// entries in the order of their times.
type memHistory struct {
	callers map[string][]memEntry
}

type memEntry struct {
	e       HistoryEntry
	expires int64
}

// AppendHistory implements HistoryStore.
func (s *MemoryStore) AppendHistory(_ context.Context, k HistoryKey, e HistoryEntry, keep time.Duration, cap int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hist.callers == nil {
		s.hist.callers = map[string][]memEntry{}
	}
	key := k.stored()
	es := s.hist.callers[key]
	at := e.At.UnixNano()
	i := sort.Search(len(es), func(i int) bool { return es[i].e.At.UnixNano() > at })
	e.Arguments = slices.Clone(e.Arguments)
	es = slices.Insert(es, i, memEntry{e: e, expires: e.At.Add(min(keep, maxCountLife)).UnixNano()})
	if cap > 0 && len(es) > cap {
		es = slices.Delete(es, 0, len(es)-cap)
	}
	s.hist.callers[key] = es
	return nil
}

// ReadHistory implements HistoryStore.
func (s *MemoryStore) ReadHistory(_ context.Context, k HistoryKey, since time.Time, max int) ([]HistoryEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.hist.callers[k.stored()]
	from := since.UnixNano()
	out := make([]HistoryEntry, 0, min(max, len(es)))
	for i := len(es) - 1; i >= 0 && len(out) < max; i-- {
		if es[i].e.At.UnixNano() <= from {
			break
		}
		out = append(out, es[i].e)
	}
	return out, nil
}

// PruneHistory implements HistoryStore.
func (s *MemoryStore) PruneHistory(_ context.Context, now time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, cut := 0, now.UnixNano()
	for k, es := range s.hist.callers {
		if n >= limit {
			break
		}
		kept := es[:0]
		for _, e := range es {
			if e.expires < cut && n < limit {
				n++
				continue
			}
			kept = append(kept, e)
		}
		if len(kept) == 0 {
			delete(s.hist.callers, k)
		} else {
			s.hist.callers[k] = kept
		}
	}
	return n, nil
}
