// Package lru is a plain least-recently-used cache under one mutex, keyed
// by byte strings: a hit is a map lookup and two pointer swaps. The engine
// keeps its memoised grant decisions and per-caller split residuals in it.
package lru

import "sync"

// Cache holds at most a fixed number of values; past it, the least
// recently used one is dropped. The zero value is not usable: call [New].
// It is safe for concurrent use.
type Cache[V comparable] struct {
	mu    sync.Mutex
	max   int
	items map[string]*entry[V]
	head  entry[V] // sentinel of the recency list: head.next is the newest
}

type entry[V comparable] struct {
	key        string
	v          V
	prev, next *entry[V]
}

// New returns an empty cache of at most max values (max ≥ 1).
func New[V comparable](max int) *Cache[V] {
	c := &Cache[V]{max: max, items: make(map[string]*entry[V], min(max, 64))}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

// Get returns the value stored under key, or the zero value.
func (c *Cache[V]) Get(key []byte) V {
	c.mu.Lock()
	e := c.items[string(key)]
	if e == nil {
		c.mu.Unlock()
		var zero V
		return zero
	}
	if c.head.next != e {
		e.unlink()
		c.pushFront(e)
	}
	v := e.v
	c.mu.Unlock()
	return v
}

// Put stores v under key and returns the value the cache holds for key
// afterwards: v, or the one another goroutine stored first (so that every
// reader of a key sees one value).
func (c *Cache[V]) Put(key []byte, v V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items[string(key)]; e != nil {
		return e.v
	}
	if len(c.items) >= c.max {
		old := c.head.prev
		old.unlink()
		delete(c.items, old.key)
	}
	e := &entry[V]{key: string(key), v: v}
	c.items[e.key] = e
	c.pushFront(e)
	return v
}

// Len returns the number of values held.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

func (c *Cache[V]) pushFront(e *entry[V]) {
	e.prev, e.next = &c.head, c.head.next
	c.head.next.prev = e
	c.head.next = e
}

func (e *entry[V]) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
