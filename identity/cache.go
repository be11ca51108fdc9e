package identity

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/toolgate/toolgate/toolcall"
)

// DefaultCacheSize is the number of verified tokens kept by default.
const DefaultCacheSize = 10000

// tokenCache holds verified tokens' callers keyed by the token's SHA-256,
// least recently used first out, each entry used only before its `exp`.
type tokenCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List // front: most recently used
	items map[[sha256.Size]byte]*list.Element
}

type cacheEntry struct {
	key    [sha256.Size]byte
	caller *toolcall.Caller
	exp    time.Time
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, ll: list.New(), items: make(map[[sha256.Size]byte]*list.Element)}
}

// get returns the caller cached for key if its token has not expired at now.
func (c *tokenCache) get(key [sha256.Size]byte, now time.Time) (*toolcall.Caller, bool) {
	caller, _, ok := c.lookup(key, now)
	return caller, ok
}

// lookup is get, also returning the token's exp.
func (c *tokenCache) lookup(key [sha256.Size]byte, now time.Time) (*toolcall.Caller, time.Time, bool) {
	if c.max <= 0 {
		return nil, time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, time.Time{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.exp) {
		c.ll.Remove(el)
		delete(c.items, key)
		return nil, time.Time{}, false
	}
	c.ll.MoveToFront(el)
	return e.caller, e.exp, true
}

func (c *tokenCache) put(key [sha256.Size]byte, caller *toolcall.Caller, exp time.Time) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value = &cacheEntry{key, caller, exp}
		c.ll.MoveToFront(el)
		return
	}
	c.items[key] = c.ll.PushFront(&cacheEntry{key, caller, exp})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

// clear forgets every entry (the key set lost a key).
func (c *tokenCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	clear(c.items)
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
