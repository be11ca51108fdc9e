package upstream

import (
	"context"
	"log/slog"
	"time"
)

// ListChangedDebounce is how long the notifications/tools/list_changed of
// one burst are collected before the upstream is listed again; a burst
// that does not end is listed after four times as long.
const ListChangedDebounce = 100 * time.Millisecond

// toolListChanged records an upstream's notifications/tools/list_changed
// and makes sure a relist runs.
func (c *conn) toolListChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.notices++
	c.noticeAt = time.Now()
	if c.relisting {
		return
	}
	c.relisting = true
	// Under c.mu with c.closed false: Close has not shut this upstream
	// down yet, so it has not reached wg.Wait, and adding to wg is safe.
	c.pool.wg.Go(c.relist)
}

// relist lists the upstream's tools again once a burst of notifications
// has ended (debounced), and again after that while more came in; a
// listing that differs from the last one is reported to
// Options.ToolsChanged, which rebuilds the revision as a reload does.
func (c *conn) relist() {
	burst := time.Now()
	for {
		c.mu.Lock()
		if c.closed || c.pool.ctx.Err() != nil {
			c.relisting = false
			c.mu.Unlock()
			return
		}
		due := c.noticeAt.Add(ListChangedDebounce)
		if limit := burst.Add(4 * ListChangedDebounce); limit.Before(due) {
			due = limit
		}
		seen := c.notices
		c.mu.Unlock()
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.pool.ctx.Done():
				t.Stop()
			}
			continue
		}

		changed := c.listAgain()
		if changed && c.pool.opts.ToolsChanged != nil {
			c.pool.opts.ToolsChanged(c.cfg.Name)
		}

		c.mu.Lock()
		if c.notices == seen || c.closed {
			c.relisting = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		burst = time.Now()
	}
}

// listAgain lists the tools of the current session, if there is one (a
// session opened later lists them anyway), and keeps the listing; it
// reports whether it differs from the last one.
func (c *conn) listAgain() bool {
	c.mu.Lock()
	s, shared := c.sess, true
	if c.listFrom != nil && c.listFrom.alive() {
		s, shared = c.listFrom, false
	}
	c.mu.Unlock()
	if s == nil || !s.alive() {
		return false
	}
	ctx, cancel := c.requestContext(context.Background())
	defer cancel()
	l, err := listTools(ctx, s.cs)
	if err != nil {
		c.failed(ctx, s, err)
		c.pool.log.Warn("upstream: tools/list after notifications/tools/list_changed failed",
			slog.String("upstream", c.cfg.Name), slog.Any("error", err))
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if shared && c.sess != s {
		return false // replaced meanwhile: its own listing counts
	}
	changed := c.setToolsLocked(l)
	if changed {
		c.pool.log.Info("upstream: tools changed", slog.String("upstream", c.cfg.Name), slog.Int("tools", len(l.tools)))
	}
	return changed
}
