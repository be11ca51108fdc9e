// Package testclock is a clock that tests move by hand, so that nothing
// waits on real time: a test passes Now where a component takes a clock
// and calls Advance where time would pass.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that moves only when Advance moves it. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
