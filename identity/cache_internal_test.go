package identity

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/toolgate/toolgate/toolcall"
)

// TestCacheBoundedLRU: the cache holds at most max entries, the least
// recently used leaves first, and an entry is never served at or past exp.
func TestCacheBoundedLRU(t *testing.T) {
	t.Parallel()
	now := time.Now()
	c := newTokenCache(2)
	k := func(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }
	a, b, d := &toolcall.Caller{Subject: "a"}, &toolcall.Caller{Subject: "b"}, &toolcall.Caller{Subject: "d"}
	c.put(k("a"), a, now.Add(time.Hour))
	c.put(k("b"), b, now.Add(time.Hour))
	if _, ok := c.get(k("a"), now); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.put(k("d"), d, now.Add(time.Minute))
	if c.len() != 2 {
		t.Fatalf("len = %d, want 2", c.len())
	}
	if _, ok := c.get(k("b"), now); ok {
		t.Error("b, the least recently used, was kept")
	}
	if got, ok := c.get(k("a"), now); !ok || got != a {
		t.Error("a was evicted")
	}
	if _, ok := c.get(k("d"), now.Add(time.Minute)); ok {
		t.Error("d served at its exp")
	}
	if c.len() != 1 {
		t.Errorf("an expired entry stays: len %d", c.len())
	}
	off := newTokenCache(0)
	off.put(k("a"), a, now.Add(time.Hour))
	if _, ok := off.get(k("a"), now); ok {
		t.Error("a cache of size 0 kept an entry")
	}
}
