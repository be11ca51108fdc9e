package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
)

// maxSeenCallers bounds the callers the adapter remembers for deciding
// whether a reload changed anybody's listing.
const maxSeenCallers = 1024

// seenCallers remembers the callers that listed tools, by fingerprint.
type seenCallers struct {
	mu      sync.Mutex
	callers map[string]*engine.Caller
	full    bool // more callers listed than were remembered
}

func (s *seenCallers) add(c *engine.Caller) {
	key := c.Fingerprint()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.callers == nil {
		s.callers = map[string]*engine.Caller{}
	}
	if _, ok := s.callers[key]; ok {
		return
	}
	if len(s.callers) >= maxSeenCallers {
		s.full = true
		return
	}
	s.callers[key] = c
}

func (s *seenCallers) snapshot() ([]*engine.Caller, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*engine.Caller, 0, len(s.callers))
	for _, c := range s.callers {
		out = append(out, c)
	}
	return out, s.full
}

// ListingChanged reports whether a caller that listed tools would see a
// different listing under next than under prev: other tools, or tools
// described differently. With more callers seen than it remembers, any
// change of revision counts.
func (a *Adapter) ListingChanged(ctx context.Context, prev, next *engine.Revision) bool {
	if prev == nil || next == nil {
		return prev != next
	}
	callers, full := a.seen.snapshot()
	if full {
		return prev.Hash() != next.Hash()
	}
	pc, nc := newRevisionCache(prev), newRevisionCache(next)
	for _, c := range callers {
		if !slices.EqualFunc(a.listing(ctx, pc, c), a.listing(ctx, nc, c), func(x, y json.RawMessage) bool { return bytes.Equal(x, y) }) {
			return true
		}
	}
	return false
}

// listing is what the caller's tools/list sends, as wire descriptors.
func (a *Adapter) listing(ctx context.Context, rc *revisionCache, c *engine.Caller) []json.RawMessage {
	d := rc.rev.Grant(ctx, c, engine.Request{Method: engine.MethodList})
	var out []json.RawMessage
	for _, i := range d.VisibleRows() {
		out = append(out, rc.wire[i])
	}
	return out
}

// NotifyToolsChanged sends notifications/tools/list_changed to the sessions
// of s. The SDK sends it when its own tool set changes, so a placeholder
// tool is added and removed (the adapter answers tools/list itself, so no
// client ever sees it).
func (a *Adapter) NotifyToolsChanged(s *mcp.Server) {
	a.notifyMu.Lock()
	defer a.notifyMu.Unlock()
	a.notifySeq++
	name := fmt.Sprintf("toolgate.revision.%d", a.notifySeq)
	s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return TextResult(msgInternal, true), nil
	})
	s.RemoveTools(name)
}
