package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio upstream's state lives in its process, and each caller's calls
// run in a process of their own (relay.go): a tool call can change the
// tools or prompts of the process it ran in, which then says so
// (notifications/tools/list_changed, prompts/list_changed) on that
// caller's session, not on the shared one. That listing is the upstream's
// from then on: the relist and the imported prompts read it from that
// session (listFrom) while it lives, so what the upstream now lists is
// what is governed (pins included, docs/contract.md §15), as it was when
// every call ran in the one process. Only the listings are read there:
// reads, subscriptions and completions stay on the shared session. An
// HTTP upstream is one server, whose notifications reach the shared
// session as well: its listing stays the shared session's.

// listChangedHandlers makes a caller session of an importing stdio
// upstream report its process's list changes as the shared session does.
func (c *conn) listChangedHandlers(cs *callerSession, opts *mcp.ClientOptions) {
	if !c.cfg.Import || c.cfg.URL != "" || c.cfg.Transport != nil {
		return
	}
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
		c.listFromCaller(cs)
		c.toolListChanged()
	}
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) {
		c.listFromCaller(cs)
		if f := c.pool.opts.ToolsChanged; f != nil {
			name := c.cfg.Name
			c.pool.wg.Go(func() { f(name) })
		}
	}
}

// listFromCaller makes cs's session the one the upstream's listings are
// read from.
func (c *conn) listFromCaller(cs *callerSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs.s != nil {
		c.listFrom = cs.s
	}
}

// listingSession is the caller session the listings are read from, nil
// when there is none alive (the shared session's listing counts).
func (c *conn) listingSession() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listFrom != nil && !c.listFrom.alive() {
		c.listFrom = nil
	}
	return c.listFrom
}
