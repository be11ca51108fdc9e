package lru

import (
	"strconv"
	"sync"
	"testing"
)

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[int](2)
	c.Put([]byte("a"), 1)
	c.Put([]byte("b"), 2)
	if got := c.Get([]byte("a")); got != 1 { // a is now the newest
		t.Fatalf("Get(a) = %d, want 1", got)
	}
	c.Put([]byte("c"), 3) // drops b
	if got := c.Get([]byte("b")); got != 0 {
		t.Fatalf("Get(b) = %d after eviction, want 0", got)
	}
	if c.Get([]byte("a")) != 1 || c.Get([]byte("c")) != 3 || c.Len() != 2 {
		t.Fatalf("a=%d c=%d len=%d, want 1 3 2", c.Get([]byte("a")), c.Get([]byte("c")), c.Len())
	}
}

func TestPutKeepsTheFirstValue(t *testing.T) {
	c := New[int](4)
	if got := c.Put([]byte("k"), 1); got != 1 {
		t.Fatalf("first Put = %d, want 1", got)
	}
	if got := c.Put([]byte("k"), 2); got != 1 {
		t.Fatalf("second Put = %d, want the stored 1", got)
	}
}

func TestConcurrentPutsAgree(t *testing.T) {
	c := New[int](8)
	var wg sync.WaitGroup
	got := make([]int, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = c.Put([]byte("k"), i+1)
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("Put %d saw %d, Put 0 saw %d: readers of one key disagree", i, got[i], got[0])
		}
	}
	for i := range 100 {
		c.Put([]byte(strconv.Itoa(i)), i)
	}
	if c.Len() != 8 {
		t.Fatalf("Len = %d, want the bound 8", c.Len())
	}
}
