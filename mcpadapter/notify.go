package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// maxListingSessions bounds the sessions whose listing caller the adapter
// remembers. The HTTP server caps live sessions well below it
// (--max-sessions); a session past the bound is not told of changes.
const maxListingSessions = 1 << 16

const methodToolsListChanged = "notifications/tools/list_changed"

// listingSessions remembers, per session, the caller its listing was made
// for, and which sessions are owed a notifications/tools/list_changed.
//
// A session's listing caller is the caller of its last tools/list (or of
// its subscriptions/listen stream, under the 2026-07-28 revision, where
// listings are made outside the stream): the caller is per request, and
// what a client holds is the listing it received last. A session that
// never listed holds nothing to invalidate; one whose last listing was
// made for nobody holds an empty listing, which no reload changes. Neither
// is remembered, so neither is ever notified.
type listingSessions struct {
	mu      sync.Mutex
	callers map[*mcp.ServerSession]*toolcall.Caller
	owed    map[*mcp.ServerSession]bool
	warned  bool
}

// listed records that ss listed (or listens) as caller c; nil c is
// nobody, kept as nil (so that a session alternating between a caller and
// nobody has one waiter, not one per change) and never notified.
func (l *listingSessions) listed(ss *mcp.ServerSession, c *toolcall.Caller, log *slog.Logger) {
	if ss == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.callers[ss]; ok {
		l.callers[ss] = c
		if c == nil {
			delete(l.owed, ss)
		}
		return
	}
	if c == nil {
		return // nothing to remember about a session that only listed as nobody
	}
	if len(l.callers) >= maxListingSessions {
		if !l.warned {
			l.warned = true
			log.Warn("toolgate: too many sessions to track; some will not be told when their tools change",
				slog.Int("max", maxListingSessions))
		}
		return
	}
	if l.callers == nil {
		l.callers = map[*mcp.ServerSession]*toolcall.Caller{}
	}
	l.callers[ss] = c
	go func() {
		_ = ss.Wait() // the session ended: forget it
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.callers, ss)
		delete(l.owed, ss)
	}()
}

// snapshot returns the sessions and their callers.
func (l *listingSessions) snapshot() map[*mcp.ServerSession]*toolcall.Caller {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[*mcp.ServerSession]*toolcall.Caller, len(l.callers))
	for ss, c := range l.callers {
		if c != nil {
			out[ss] = c
		}
	}
	return out
}

// owe marks sessions as owed a notification (those still tracked).
func (l *listingSessions) owe(sessions []*mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owed == nil {
		l.owed = map[*mcp.ServerSession]bool{}
	}
	for _, ss := range sessions {
		if c := l.callers[ss]; c != nil {
			l.owed[ss] = true
		}
	}
}

// take reports whether ss is owed a notification, and settles it.
func (l *listingSessions) take(ss *mcp.ServerSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.owed[ss] {
		return false
	}
	delete(l.owed, ss)
	return true
}

// filterListChanged is the sending middleware that lets a
// notifications/tools/list_changed reach only the sessions owed one: the
// SDK sends it to every session whenever its own tool set changes.
func (a *Adapter) filterListChanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodToolsListChanged {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if ss == nil || !a.sessions.take(ss) {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// changedSessions returns the remembered sessions whose caller would see
// a different listing under next than under prev (other tools, or tools
// described differently). Each distinct caller is decided once per
// revision.
func (a *Adapter) changedSessions(ctx context.Context, prev, next *engine.Revision) []*mcp.ServerSession {
	sessions := a.sessions.snapshot()
	if len(sessions) == 0 || prev == next {
		return nil
	}
	var pc, nc *revisionCache
	if prev != nil {
		pc = a.cacheOf(prev)
	}
	if next != nil {
		nc = a.cacheOf(next)
	}
	changed := map[string]bool{} // by caller fingerprint
	var out []*mcp.ServerSession
	for ss, c := range sessions {
		key := c.Fingerprint()
		ch, ok := changed[key]
		if !ok {
			ch = !slices.EqualFunc(a.listing(ctx, pc, c), a.listing(ctx, nc, c), func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
			changed[key] = ch
		}
		if ch {
			out = append(out, ss)
		}
	}
	return out
}

// ListingChanged reports whether a session that listed tools would see a
// different listing under next than under prev: other tools, or tools
// described differently.
func (a *Adapter) ListingChanged(ctx context.Context, prev, next *engine.Revision) bool {
	return len(a.changedSessions(ctx, prev, next)) > 0
}

// NotifyListingChanged sends notifications/tools/list_changed, after a
// swap from prev to next, to exactly the sessions of s whose listing
// changed (docs/contract.md §9): those whose listing caller (see NewServer) would now
// list other tools. Sessions that never listed, and those whose caller is
// nobody, are never notified. Listings are compared without _meta. It
// returns the number of sessions notified.
func (a *Adapter) NotifyListingChanged(ctx context.Context, s *mcp.Server, prev, next *engine.Revision) int {
	sessions := a.changedSessions(ctx, prev, next)
	if len(sessions) == 0 {
		return 0
	}
	a.sessions.owe(sessions)
	a.sendListChanged(s)
	return len(sessions)
}

// listing is what the caller's tools/list sends, as wire descriptors; nil
// for a nil revision.
func (a *Adapter) listing(ctx context.Context, rc *revisionCache, c *toolcall.Caller) []json.RawMessage {
	if rc == nil {
		return nil
	}
	d := rc.rev.Grant(ctx, c, engine.Request{Method: engine.MethodList})
	var out []json.RawMessage
	wire := rc.wires()
	for _, i := range a.visibleRows(d) {
		out = append(out, wire[i])
	}
	return out
}

// NotifyToolsChanged sends notifications/tools/list_changed to every
// session of s that has listed tools as somebody, whether or not its
// listing changed. Prefer NotifyListingChanged, which tells only the
// sessions concerned.
func (a *Adapter) NotifyToolsChanged(s *mcp.Server) {
	sessions := a.sessions.snapshot()
	a.sessions.owe(slices.Collect(maps.Keys(sessions)))
	a.sendListChanged(s)
}

// sendListChanged makes the SDK send notifications/tools/list_changed,
// which it does when its own tool set changes: a placeholder tool is added
// and removed (the adapter answers tools/list itself, so no client ever
// sees it). filterListChanged passes it to the sessions owed one only.
func (a *Adapter) sendListChanged(s *mcp.Server) {
	a.notifyMu.Lock()
	defer a.notifyMu.Unlock()
	a.notifySeq++
	name := fmt.Sprintf("toolgate.revision.%d", a.notifySeq)
	s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return TextResult(AnswerInternal, true), nil
	})
	s.RemoveTools(name)
}
