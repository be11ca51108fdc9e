package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/toolcall"
)

// catalogSessions remembers, per session, the caller of its
// resources/subscribe: updates reach it only while that caller may see
// the resource.
type catalogSessions struct {
	mu      sync.Mutex
	callers map[*mcp.ServerSession]*toolcall.Caller
	subs    map[*mcp.ServerSession]map[string]string // URI → upstream
}

// subscribed records that ss subscribed to uri as c; it reports whether
// the session was not subscribed to it yet.
func (k *catalogSessions) subscribed(ss *mcp.ServerSession, c *toolcall.Caller, uri, upstream string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.callers == nil {
		k.callers = map[*mcp.ServerSession]*toolcall.Caller{}
		k.subs = map[*mcp.ServerSession]map[string]string{}
	}
	k.callers[ss] = c
	if k.subs[ss] == nil {
		k.subs[ss] = map[string]string{}
	}
	_, had := k.subs[ss][uri]
	k.subs[ss][uri] = upstream
	return !had
}

// has reports whether ss is subscribed to uri.
func (k *catalogSessions) has(ss *mcp.ServerSession, uri string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.subs[ss][uri]
	return ok
}

// forgetIfIdle forgets a session that holds no subscription any more.
func (k *catalogSessions) forgetIfIdle(ss *mcp.ServerSession) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.subs[ss]) == 0 {
		delete(k.subs, ss)
		delete(k.callers, ss)
	}
}

func (k *catalogSessions) unsubscribed(ss *mcp.ServerSession, uri string) (upstream string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	upstream, ok = k.subs[ss][uri]
	delete(k.subs[ss], uri)
	return upstream, ok
}

func (k *catalogSessions) caller(ss *mcp.ServerSession) *toolcall.Caller {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.callers[ss]
}

// dropSession forgets a session that ended and returns its subscriptions.
func (k *catalogSessions) dropSession(ss *mcp.ServerSession) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	subs := k.subs[ss]
	delete(k.subs, ss)
	delete(k.callers, ss)
	return subs
}

func (a *Adapter) subscribe(ctx context.Context, caller *toolcall.Caller, req *mcp.SubscribeRequest, method string, next mcp.MethodHandler) (mcp.Result, error) {
	if req.Params == nil {
		return nil, unknownResource("")
	}
	uri := req.Params.URI
	rec := &CatalogRecord{Method: engine.MethodSubscribe, Caller: caller, Name: uri, Start: time.Now()}
	if caller != nil {
		defer a.observeCatalog(ctx, rec)
	}
	res := a.allowedResource(ctx, caller, engine.MethodSubscribe, uri, req.Params.Meta, rec)
	if res == nil {
		return nil, unknownResource(uri)
	}
	if req.Session != nil && a.catalog.has(req.Session, uri) {
		// Subscribed already: the upstream is, once for this session.
		a.catalog.subscribed(req.Session, caller, uri, res.Upstream)
		return next(ctx, method, req)
	}
	if err := a.opts.Catalog.Subscribe(ctx, res.Upstream, uri); err != nil {
		rec.Err = err
		return nil, a.relayError("resources/subscribe", err)
	}
	if req.Session != nil {
		first := a.catalog.caller(req.Session) == nil
		a.catalog.subscribed(req.Session, caller, uri, res.Upstream)
		if first {
			ss := req.Session
			go func() {
				_ = ss.Wait()
				for uri, up := range a.catalog.dropSession(ss) {
					_ = a.opts.Catalog.Unsubscribe(context.Background(), up, uri)
				}
			}()
		}
	}
	return next(ctx, method, req)
}

// listen is subscriptions/listen (2026-07-28): of the resources it asks
// for, only those the caller may read are kept — a hidden URI is dropped
// exactly as one nothing serves — subscribed upstream, and acknowledged.
func (a *Adapter) listen(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	r, ok := req.(*mcp.SubscriptionsListenRequest)
	if !ok || r.Params == nil || r.Params.Notifications == nil || len(r.Params.Notifications.ResourceSubscriptions) == 0 {
		return next(ctx, method, req)
	}
	caller := a.opts.Caller(ctx, req)
	n := *r.Params.Notifications
	var kept []string
	for _, uri := range n.ResourceSubscriptions {
		rec := &CatalogRecord{Method: engine.MethodSubscribe, Caller: caller, Name: uri, Start: time.Now()}
		res := a.allowedResource(ctx, caller, engine.MethodSubscribe, uri, r.Params.Meta, rec)
		if caller != nil {
			a.observeCatalog(ctx, rec)
		}
		if res == nil {
			continue
		}
		kept = append(kept, uri)
		if r.Session == nil || a.catalog.has(r.Session, uri) {
			continue // one upstream subscription per session and URI
		}
		if err := a.opts.Catalog.Subscribe(ctx, res.Upstream, uri); err != nil {
			a.log.Error("subscriptions/listen: upstream subscribe failed", slog.String("upstream", res.Upstream), slog.Any("error", err))
			kept = kept[:len(kept)-1]
			continue
		}
		a.catalog.subscribed(r.Session, caller, uri, res.Upstream)
		defer func() {
			if up, ok := a.catalog.unsubscribed(r.Session, uri); ok {
				_ = a.opts.Catalog.Unsubscribe(context.WithoutCancel(ctx), up, uri)
			}
			a.catalog.forgetIfIdle(r.Session)
		}()
	}
	n.ResourceSubscriptions = kept
	params := *r.Params
	params.Notifications = &n
	sent := *r
	sent.Params = &params
	return next(ctx, method, &sent)
}

// unsubscribe answers alike for every URI: it tells nothing of what
// exists.
func (a *Adapter) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest, method string, next mcp.MethodHandler) (mcp.Result, error) {
	if req.Params != nil && req.Session != nil {
		if up, ok := a.catalog.unsubscribed(req.Session, req.Params.URI); ok {
			if err := a.opts.Catalog.Unsubscribe(ctx, up, req.Params.URI); err != nil {
				a.log.Warn("resources/unsubscribe: upstream refused", slog.String("upstream", up), slog.Any("error", err))
			}
		}
	}
	return next(ctx, method, req)
}

const methodResourceUpdated = "notifications/resources/updated"

// filterUpdates lets a notifications/resources/updated reach a session
// only while the caller that subscribed may still read the resource.
func (a *Adapter) filterUpdates(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodResourceUpdated {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		params, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
		if ss == nil || params == nil {
			return nil, nil
		}
		caller := a.catalog.caller(ss)
		rec := &CatalogRecord{}
		if a.allowedResource(ctx, caller, methodResourceUpdated, params.URI, nil, rec) == nil {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// catalogEvent passes a change behind the Catalog on to s's sessions.
func (a *Adapter) catalogEvent(s *mcp.Server, ev CatalogEvent) {
	switch ev.Kind {
	case ResourceUpdated:
		_ = s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: ev.URI})
	case ResourcesChanged:
		a.notifyMu.Lock()
		a.notifySeq++
		uri := fmt.Sprintf("toolgate:placeholder/%d", a.notifySeq)
		a.notifyMu.Unlock()
		// The SDK sends notifications/resources/list_changed when its own
		// resources change: add and remove a placeholder (the adapter
		// answers resources/list itself, so no client ever sees it).
		s.AddResource(&mcp.Resource{URI: uri, Name: "toolgate"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, unknownResource(uri)
		})
		s.RemoveResources(uri)
	}
}

// NotifyPromptsChanged sends notifications/prompts/list_changed to the
// sessions of s when the prompts of next differ from those of prev (an
// upstream's prompts changed, and the revision was rebuilt).
func (a *Adapter) NotifyPromptsChanged(s *mcp.Server, prev, next *engine.Revision) {
	if a.opts.Catalog == nil || prev == nil || next == nil {
		return
	}
	x, _ := json.Marshal(prev.Registry().Prompts)
	y, _ := json.Marshal(next.Registry().Prompts)
	if string(x) == string(y) {
		return
	}
	a.notifyMu.Lock()
	a.notifySeq++
	name := fmt.Sprintf("toolgate.revision.%d", a.notifySeq)
	a.notifyMu.Unlock()
	s.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, unknownPrompt(name)
	})
	s.RemovePrompts(name)
}
