package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// MaxSubscriptionsPerSession bounds the resources one client session is
// subscribed to at once through the adapter (resources/subscribe and
// subscriptions/listen together): each is an upstream subscription and
// entries kept until it ends (docs/contract.md §16, docs/relay.md).
const MaxSubscriptionsPerSession = 1024

// AnswerTooManySubscriptions is the message of the answer (JSON-RPC
// -32600) to a resources/subscribe that would take a session past
// MaxSubscriptionsPerSession.
var AnswerTooManySubscriptions = fmt.Sprintf("Too many subscriptions on this session (at most %d). Unsubscribe from one first.", MaxSubscriptionsPerSession)

func tooManySubscriptions() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: AnswerTooManySubscriptions}
}

// catalogSessions remembers, per session, the caller of its
// resources/subscribe (updates reach it only while that caller may see
// the resource) and its subscriptions, at most MaxSubscriptionsPerSession.
type catalogSessions struct {
	mu      sync.Mutex
	callers map[*mcp.ServerSession]*toolcall.Caller
	subs    map[*mcp.ServerSession]map[string]*subEntry // by URI
	// watched: the sessions whose end is awaited to drop their
	// subscriptions (one goroutine each).
	watched map[*mcp.ServerSession]bool
}

// subEntry is one subscription of a session.
type subEntry struct {
	upstream string
	// live: the upstream was subscribed for it. An entry not live yet is
	// being subscribed; whoever removes it meanwhile leaves the upstream
	// to the subscriber, which finds it gone (confirm) and undoes it.
	live bool
}

// reservation is what reserve found.
type reservation int

const (
	reserved reservation = iota // a new entry, not live yet
	already                     // the session is subscribed to the URI
	full                        // the session holds MaxSubscriptionsPerSession
)

// reserve records, at most MaxSubscriptionsPerSession a session, that ss
// subscribes to uri as c, before the upstream is; watch says the
// session's end is not awaited yet (the caller starts that, once).
func (k *catalogSessions) reserve(ss *mcp.ServerSession, c *toolcall.Caller, uri, upstream string, watch bool) (e *subEntry, r reservation, startWatch bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.callers == nil {
		k.callers = map[*mcp.ServerSession]*toolcall.Caller{}
		k.subs = map[*mcp.ServerSession]map[string]*subEntry{}
		k.watched = map[*mcp.ServerSession]bool{}
	}
	if e := k.subs[ss][uri]; e != nil {
		k.callers[ss] = c
		return e, already, false
	}
	if len(k.subs[ss]) >= MaxSubscriptionsPerSession {
		return nil, full, false
	}
	k.callers[ss] = c
	if k.subs[ss] == nil {
		k.subs[ss] = map[string]*subEntry{}
	}
	e = &subEntry{upstream: upstream}
	k.subs[ss][uri] = e
	if watch && !k.watched[ss] {
		k.watched[ss] = true
		startWatch = true
	}
	return e, reserved, startWatch
}

// confirm makes e live once its upstream subscription is made; false: e
// was removed meanwhile (unsubscribed, or the session ended), and the
// upstream subscription is the confirmer's to undo.
func (k *catalogSessions) confirm(ss *mcp.ServerSession, uri string, e *subEntry) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.subs[ss][uri] != e {
		return false
	}
	e.live = true
	return true
}

// release removes e, whose upstream subscription failed.
func (k *catalogSessions) release(ss *mcp.ServerSession, uri string, e *subEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.subs[ss][uri] == e {
		delete(k.subs[ss], uri)
	}
	k.forgetIdleLocked(ss)
}

// forgetIfIdle forgets a session that holds no subscription any more.
func (k *catalogSessions) forgetIfIdle(ss *mcp.ServerSession) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.forgetIdleLocked(ss)
}

// has reports whether ss is subscribed to uri.
func (k *catalogSessions) has(ss *mcp.ServerSession, uri string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.subs[ss][uri]
	return ok
}

// forgetIdleLocked forgets a session that holds no subscription any
// more, unless its end is awaited (which forgets it). k.mu is held.
func (k *catalogSessions) forgetIdleLocked(ss *mcp.ServerSession) {
	if len(k.subs[ss]) == 0 && !k.watched[ss] {
		delete(k.subs, ss)
		delete(k.callers, ss)
	}
}

// unsubscribed removes ss's subscription to uri; ok says the upstream
// was subscribed for it (and is the remover's to unsubscribe).
func (k *catalogSessions) unsubscribed(ss *mcp.ServerSession, uri string) (upstream string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.subs[ss][uri]
	if e == nil {
		return "", false
	}
	delete(k.subs[ss], uri)
	if len(k.subs[ss]) == 0 {
		delete(k.subs, ss)
	}
	return e.upstream, e.live
}

func (k *catalogSessions) caller(ss *mcp.ServerSession) *toolcall.Caller {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.callers[ss]
}

// dropSession forgets a session that ended and returns its live
// subscriptions (URI → upstream).
func (k *catalogSessions) dropSession(ss *mcp.ServerSession) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	live := map[string]string{}
	for uri, e := range k.subs[ss] {
		if e.live {
			live[uri] = e.upstream
		}
	}
	delete(k.subs, ss)
	delete(k.callers, ss)
	delete(k.watched, ss)
	return live
}

// held counts the sessions known and the subscriptions they hold.
func (k *catalogSessions) held() (sessions, subs int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range k.subs {
		subs += len(m)
	}
	return max(len(k.subs), len(k.callers), len(k.watched)), subs
}

func (a *Adapter) subscribe(ctx context.Context, caller *toolcall.Caller, req *mcp.SubscribeRequest, method string, next mcp.MethodHandler) (mcp.Result, error) {
	if req.Params == nil {
		return nil, unknownResource("")
	}
	uri := req.Params.URI
	rec := &hooks.CatalogRecord{Method: engine.MethodSubscribe, Caller: caller, Name: uri, Start: time.Now()}
	if caller != nil {
		defer a.observeCatalog(ctx, rec)
	}
	// Hidden ≡ absent first: a hidden URI answers as one nothing serves,
	// whatever the session holds.
	res := a.allowedResource(ctx, caller, engine.MethodSubscribe, uri, req.Params.Meta, rec)
	if res == nil {
		return nil, unknownResource(uri)
	}
	ss := req.Session
	if ss == nil {
		// Never from the SDK: with no session, nothing could receive an
		// update, nor end the subscription.
		return next(ctx, method, req)
	}
	e, r, watch := a.catalog.reserve(ss, caller, uri, res.Upstream, true)
	switch r {
	case already:
		// Subscribed already: the upstream is, once for this session.
		return next(ctx, method, req)
	case full:
		rec.Err = errTooManySubscriptions
		return nil, tooManySubscriptions()
	}
	if watch {
		// At the session's end, its subscriptions go: upstream, and in
		// the SDK's own table (which keeps a URI's entry, emptied, when a
		// session ends; its unsubscribe removes it).
		go func() {
			_ = ss.Wait()
			for uri, up := range a.catalog.dropSession(ss) {
				_ = a.opts.Catalog.Unsubscribe(context.Background(), up, uri)
				_, _ = next(context.Background(), engine.MethodUnsubscribe, unsubscribeRequest(ss, uri))
			}
		}()
	}
	if err := a.opts.Catalog.Subscribe(ctx, res.Upstream, uri); err != nil {
		a.catalog.release(ss, uri, e)
		rec.Err = err
		return nil, a.relayError("resources/subscribe", err)
	}
	if !a.catalog.confirm(ss, uri, e) {
		// Unsubscribed, or the session ended, meanwhile.
		_ = a.opts.Catalog.Unsubscribe(context.WithoutCancel(ctx), res.Upstream, uri)
	}
	out, err := next(ctx, method, req)
	if !a.catalog.has(ss, uri) {
		// Gone meanwhile: out of the SDK's table too (whichever of this
		// and the session's end reaches it last removes it).
		_, _ = next(context.WithoutCancel(ctx), engine.MethodUnsubscribe, unsubscribeRequest(ss, uri))
	}
	return out, err
}

func unsubscribeRequest(ss *mcp.ServerSession, uri string) *mcp.UnsubscribeRequest {
	return &mcp.UnsubscribeRequest{Session: ss, Params: &mcp.UnsubscribeParams{URI: uri}}
}

var errTooManySubscriptions = errors.New("too many subscriptions on this session")

// listen is subscriptions/listen (2026-07-28): of the resources it asks
// for, only those the caller may read are kept — a hidden URI is dropped
// exactly as one nothing serves — subscribed upstream, and acknowledged.
func (a *Adapter) listen(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	r, ok := req.(*mcp.SubscriptionsListenRequest)
	if !ok || r.Params == nil || r.Params.Notifications == nil || len(r.Params.Notifications.ResourceSubscriptions) == 0 {
		return next(ctx, method, req)
	}
	caller, _ := a.opts.Caller(ctx, req)
	n := *r.Params.Notifications
	var kept []string
	for _, uri := range n.ResourceSubscriptions {
		rec := &hooks.CatalogRecord{Method: engine.MethodSubscribe, Caller: caller, Name: uri, Start: time.Now()}
		res := a.allowedResource(ctx, caller, engine.MethodSubscribe, uri, r.Params.Meta, rec)
		if caller != nil {
			a.observeCatalog(ctx, rec)
		}
		if res == nil {
			continue
		}
		if r.Session == nil {
			kept = append(kept, uri)
			continue
		}
		e, got, _ := a.catalog.reserve(r.Session, caller, uri, res.Upstream, false)
		switch got {
		case already:
			kept = append(kept, uri) // one upstream subscription per session and URI
			continue
		case full:
			a.log.Warn("subscriptions/listen: too many subscriptions on this session", slog.Int("max", MaxSubscriptionsPerSession))
			continue
		}
		if err := a.opts.Catalog.Subscribe(ctx, res.Upstream, uri); err != nil {
			a.log.Error("subscriptions/listen: upstream subscribe failed", slog.String("upstream", res.Upstream), slog.Any("error", err))
			a.catalog.release(r.Session, uri, e)
			continue
		}
		kept = append(kept, uri)
		if !a.catalog.confirm(r.Session, uri, e) {
			_ = a.opts.Catalog.Unsubscribe(context.WithoutCancel(ctx), res.Upstream, uri)
			continue
		}
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
			// (not ok: no subscription, or one being made, whose
			// subscriber undoes it.)
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
		rec := &hooks.CatalogRecord{}
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
