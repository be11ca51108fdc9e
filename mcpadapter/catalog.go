package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
)

// Catalog is where the prompts, resources, resource templates and
// completions the adapter governs come from (docs/contract.md §16): the
// upstream pool's importing upstreams. The adapter decides what each
// caller may see; a Catalog lists, routes and relays. Implementations are
// safe for concurrent use.
type Catalog interface {
	// GetPrompt gets the imported prompt p from its upstream (params.Name
	// is toolgate's name; the Catalog sends the upstream's).
	GetPrompt(ctx context.Context, p *registry.Prompt, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error)
	// Resources lists every resource, each with the upstream that owns
	// it (the first in configuration order that lists its URI).
	Resources(ctx context.Context) []CatalogResource
	// Templates lists every resource template, owned likewise.
	Templates(ctx context.Context) []CatalogTemplate
	// ReadResource, Subscribe, Unsubscribe and Complete relay to the named
	// upstream.
	ReadResource(ctx context.Context, upstream string, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, upstream, uri string) error
	Unsubscribe(ctx context.Context, upstream, uri string) error
	Complete(ctx context.Context, upstream string, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
	// Offers says what the upstreams behind it announce.
	Offers() CatalogOffers
	// Watch calls f for each event until stop is called.
	Watch(f func(CatalogEvent)) (stop func())
}

// CatalogResource is a resource and the upstream that owns it.
type CatalogResource struct {
	Upstream, Section string
	Resource          *mcp.Resource
}

// CatalogTemplate is a resource template and the upstream that owns it.
type CatalogTemplate struct {
	Upstream, Section string
	Template          *mcp.ResourceTemplate
}

// CatalogOffers is what a Catalog's upstreams announce.
type CatalogOffers struct {
	Prompts, Resources, Subscribe, Completions bool
}

// CatalogEventKind says what changed behind a Catalog.
type CatalogEventKind int

const (
	// PromptsChanged: an upstream's notifications/prompts/list_changed.
	PromptsChanged CatalogEventKind = iota
	// ResourcesChanged: an upstream's notifications/resources/list_changed.
	ResourcesChanged
	// ResourceUpdated: an upstream's notifications/resources/updated for URI.
	ResourceUpdated
)

// CatalogEvent is one change behind a Catalog.
type CatalogEvent struct {
	Kind     CatalogEventKind
	Upstream string
	URI      string
}

// Answers of the catalog methods (docs/contract.md §16). A prompt or
// resource the caller may not see answers exactly as one that does not
// exist: these are the answers for both.
const (
	// AnswerPromptUnverified is the message of prompts/get (and of a
	// completion of a prompt's argument) when the grant decision failed,
	// for every name alike.
	AnswerPromptUnverified = "Prompt access could not be verified."
	// AnswerCatalogInternal is the message of a relay that failed other
	// than with the upstream's own JSON-RPC error.
	AnswerCatalogInternal = "An internal error occurred."
)

// AnswerUnknownPrompt is the message of the answer to prompts/get of a
// hidden prompt and of a name no prompt has.
func AnswerUnknownPrompt(name string) string { return fmt.Sprintf("unknown prompt %q", name) }

// AnswerUnknownResource is the message of the answer to resources/read and
// resources/subscribe of a hidden resource and of a URI nothing serves.
const AnswerUnknownResource = "Resource not found"

func unknownPrompt(name string) error {
	// The go-sdk's own answer for a prompt it does not have.
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: AnswerUnknownPrompt(name)}
}

func unknownResource(uri string) error { return mcp.ResourceNotFoundError(uri) }

// catalogSessions remembers, per session, the caller of its
// resources/subscribe: updates reach it only while that caller may see
// the resource.
type catalogSessions struct {
	mu      sync.Mutex
	callers map[*mcp.ServerSession]*engine.Caller
	subs    map[*mcp.ServerSession]map[string]string // URI → upstream
}

// subscribed records that ss subscribed to uri as c; it reports whether
// the session was not subscribed to it yet.
func (k *catalogSessions) subscribed(ss *mcp.ServerSession, c *engine.Caller, uri, upstream string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.callers == nil {
		k.callers = map[*mcp.ServerSession]*engine.Caller{}
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

func (k *catalogSessions) caller(ss *mcp.ServerSession) *engine.Caller {
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

// catalogServerOptions completes the options of a server governed with a
// Catalog: resources/subscribe is answered by the adapter, which lets the
// SDK keep track of the session's subscriptions (so that
// Server.ResourceUpdated reaches it).
func (a *Adapter) catalogServerOptions(o *mcp.ServerOptions) {
	if a.opts.Catalog == nil {
		return
	}
	if o.SubscribeHandler == nil {
		o.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
	}
	if o.UnsubscribeHandler == nil {
		o.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	// The SDK agrees to a subscriptions/listen (2026-07-28) only for what
	// its own capabilities say; what a session is told at initialize is
	// what the upstreams offer (announce).
	caps := &mcp.ServerCapabilities{}
	if o.Capabilities != nil {
		cp := *o.Capabilities
		caps = &cp
	}
	if caps.Prompts == nil {
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if caps.Resources == nil {
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
	}
	o.Capabilities = caps
}

// installCatalog makes s serve the Catalog's prompts and resources
// through the adapter: listings, gets, reads, subscriptions and
// completions are decided per caller; the upstreams' list_changed and
// updates reach the sessions they concern.
func (a *Adapter) installCatalog(s *mcp.Server) {
	if a.opts.Catalog == nil {
		return
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			switch method {
			case engine.MethodPromptsList, engine.MethodPromptsGet, engine.MethodResourcesList, engine.MethodTemplatesList,
				engine.MethodResourcesRead, engine.MethodSubscribe, engine.MethodUnsubscribe, engine.MethodComplete:
			case methodSubscriptionsListen:
				return a.listen(ctx, method, req, next)
			case "initialize", "server/discover":
				res, err = next(ctx, method, req)
				a.announce(res)
				return res, err
			default:
				return next(ctx, method, req)
			}
			defer func() {
				if v := recover(); v != nil {
					a.log.Error(method+" panicked; answered with an internal error", slog.Any("error", &PanicError{Value: v, Stack: debug.Stack()}))
					res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: AnswerCatalogInternal}
				}
			}()
			return a.serveCatalog(ctx, method, req, next)
		}
	})
	s.AddSendingMiddleware(a.filterUpdates)
	a.opts.Catalog.Watch(func(ev CatalogEvent) { a.catalogEvent(s, ev) })
}

// announce adds to an initialize (or server/discover) result what the
// upstreams behind the Catalog offer, each with listChanged.
func (a *Adapter) announce(res mcp.Result) {
	var caps **mcp.ServerCapabilities
	switch r := res.(type) {
	case *mcp.InitializeResult:
		caps = &r.Capabilities
	case *mcp.DiscoverResult:
		caps = &r.Capabilities
	default:
		return
	}
	o := a.opts.Catalog.Offers()
	c := &mcp.ServerCapabilities{}
	if *caps != nil {
		cp := **caps
		c = &cp
	}
	c.Prompts, c.Resources, c.Completions = nil, nil, nil
	if o.Prompts {
		c.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if o.Resources {
		c.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: o.Subscribe}
	}
	if o.Completions {
		c.Completions = &mcp.CompletionCapabilities{}
	}
	*caps = c
}

// rawMeta is the _meta of params as the SDK decoded it. The wire layer
// rewrites only tools/call and tools/list: here its key, should a client
// send it, is an entry like any other, never read as the wire's.
func rawMeta(m mcp.Meta) json.RawMessage {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}

func (a *Adapter) serveCatalog(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	caller := a.opts.Caller(ctx, req)
	switch r := req.(type) {
	case *mcp.ListPromptsRequest:
		return a.listPrompts(ctx, caller, r), nil
	case *mcp.GetPromptRequest:
		return a.getPrompt(ctx, caller, r)
	case *mcp.ListResourcesRequest:
		return a.listResources(ctx, caller, r), nil
	case *mcp.ListResourceTemplatesRequest:
		return a.listTemplates(ctx, caller, r), nil
	case *mcp.ReadResourceRequest:
		return a.readResource(ctx, caller, r)
	case *mcp.SubscribeRequest:
		return a.subscribe(ctx, caller, r, method, next)
	case *mcp.UnsubscribeRequest:
		return a.unsubscribe(ctx, r, method, next)
	case *mcp.CompleteRequest:
		return a.complete(ctx, caller, r, method, next)
	}
	return next(ctx, method, req)
}

// CatalogRecord is one decision on a prompt or a resource (prompts/get,
// resources/read, resources/subscribe, completion/complete), as observers
// hear of it.
type CatalogRecord struct {
	Method   string
	Caller   *engine.Caller
	Revision *engine.Revision
	// Name is the prompt name or the URI as sent.
	Name string
	// Upstream is the upstream that owns it; "" when nothing does.
	Upstream string
	// Allowed says whether it was relayed; Err is a failed decision or
	// a failed relay.
	Allowed bool
	Err     error
	// Outcome is how the decision was reached.
	Outcome  engine.Outcome
	Start    time.Time
	Duration time.Duration
}

func (a *Adapter) observeCatalog(ctx context.Context, rec *CatalogRecord) {
	rec.Duration = time.Since(rec.Start)
	for _, o := range a.observers {
		if o.Catalog == nil {
			continue
		}
		if err := safely(func() error { o.Catalog(ctx, rec); return nil }); err != nil {
			a.log.Error("decision observer failed; ignored", slog.String("observer", o.Name), slog.Any("error", err))
		}
	}
}

// promptDecision is the grant decision for a prompts method.
func (a *Adapter) promptDecision(ctx context.Context, caller *engine.Caller, rev *engine.Revision, method, name string, args json.RawMessage, meta mcp.Meta) *engine.GrantDecision {
	return rev.Grant(ctx, caller, engine.Request{Method: method, Prompt: name, Arguments: args, Meta: engine.BoundMeta(rawMeta(meta))})
}

func (a *Adapter) listPrompts(ctx context.Context, caller *engine.Caller, req *mcp.ListPromptsRequest) *mcp.ListPromptsResult {
	res := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
	res.CacheScope = "private"
	if caller == nil {
		return res
	}
	rev := a.opts.Revisions.Current()
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	d := a.promptDecision(ctx, caller, rev, engine.MethodPromptsList, "", nil, meta)
	if d.Outcome == engine.Failed {
		a.log.Error("prompts/list: grant decision failed; "+a.fallbackText(),
			slog.String("subject", caller.Subject), slog.String("revision", rev.String()), slog.Any("error", d.Err))
		if a.opts.ListFallback == ListFallbackNone {
			return res
		}
	}
	prompts := rev.Registry().Prompts
	for _, i := range d.VisiblePrompts() {
		res.Prompts = append(res.Prompts, promptDescriptor(&prompts[i]))
	}
	return res
}

func (a *Adapter) fallbackText() string {
	if a.opts.ListFallback == ListFallbackNone {
		return "listing nothing (--list-fallback none)"
	}
	return "listing the base decision"
}

// promptDescriptor is the upstream's definition under toolgate's name.
func promptDescriptor(p *registry.Prompt) *mcp.Prompt {
	out := &mcp.Prompt{}
	if len(p.Definition) > 0 {
		_ = json.Unmarshal(p.Definition, out)
	}
	out.Name = p.Name
	return out
}

func (a *Adapter) getPrompt(ctx context.Context, caller *engine.Caller, req *mcp.GetPromptRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, unknownPrompt("")
	}
	name := req.Params.Name
	if caller == nil {
		return nil, unknownPrompt(name)
	}
	rec := &CatalogRecord{Method: engine.MethodPromptsGet, Caller: caller, Name: name, Start: time.Now()}
	defer a.observeCatalog(ctx, rec)
	rev := a.opts.Revisions.Current()
	rec.Revision = rev
	var args json.RawMessage
	if req.Params.Arguments != nil {
		args, _ = json.Marshal(req.Params.Arguments)
	}
	d := a.promptDecision(ctx, caller, rev, engine.MethodPromptsGet, name, args, req.Params.Meta)
	rec.Outcome = d.Outcome
	ok, err := d.PromptAllowed(name)
	if err != nil {
		rec.Err = err
		a.log.Error("prompts/get: grant decision failed; refused",
			slog.String("subject", caller.Subject), slog.String("revision", rev.String()), slog.Any("error", err))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: AnswerPromptUnverified}
	}
	if !ok {
		return nil, unknownPrompt(name)
	}
	p := rev.Prompt(name)
	rec.Upstream, rec.Allowed = p.Upstream, true
	res, err := a.opts.Catalog.GetPrompt(ctx, p, req.Params)
	if err != nil {
		rec.Err = err
		return nil, a.relayError("prompts/get", err)
	}
	return res, nil
}

// relayError is what the caller gets for a failed relay: the upstream's
// own JSON-RPC error, else the generic internal error (the detail is
// logged).
func (a *Adapter) relayError(method string, err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	a.log.Error(method+": relay failed", slog.Any("error", err))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: AnswerCatalogInternal}
}

// resourceDecision decides one resource (or template) for caller.
func (a *Adapter) resourceDecision(ctx context.Context, caller *engine.Caller, rev *engine.Revision, method, uri string, meta mcp.Meta, res *engine.Resource) engine.ResourceDecision {
	d := rev.GrantResource(ctx, caller, engine.Request{Method: method, URI: uri, Meta: engine.BoundMeta(rawMeta(meta))}, res)
	if d.Outcome == engine.Failed {
		a.log.Error(method+": resource decision failed", slog.String("subject", caller.Subject),
			slog.String("revision", rev.String()), slog.String("upstream", res.Upstream), slog.Any("error", d.Err))
	}
	return d
}

// visible is the lenient reading of a listing.
func (a *Adapter) visible(d engine.ResourceDecision) bool {
	if d.Outcome == engine.Failed && a.opts.ListFallback == ListFallbackNone {
		return false
	}
	return d.Visible()
}

func resourceOf(r CatalogResource) *engine.Resource {
	return &engine.Resource{URI: r.Resource.URI, Name: r.Resource.Name, MIMEType: r.Resource.MIMEType, Upstream: r.Upstream, Section: r.Section}
}

func templateOf(t CatalogTemplate, uri string) *engine.Resource {
	return &engine.Resource{URI: uri, Name: t.Template.Name, MIMEType: t.Template.MIMEType, Upstream: t.Upstream, Section: t.Section, Template: t.Template.URITemplate}
}

func (a *Adapter) listResources(ctx context.Context, caller *engine.Caller, req *mcp.ListResourcesRequest) *mcp.ListResourcesResult {
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	res.CacheScope = "private"
	if caller == nil {
		return res
	}
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	rev := a.opts.Revisions.Current()
	for _, r := range a.opts.Catalog.Resources(ctx) {
		if a.visible(a.resourceDecision(ctx, caller, rev, engine.MethodResourcesList, "", meta, resourceOf(r))) {
			res.Resources = append(res.Resources, r.Resource)
		}
	}
	return res
}

func (a *Adapter) listTemplates(ctx context.Context, caller *engine.Caller, req *mcp.ListResourceTemplatesRequest) *mcp.ListResourceTemplatesResult {
	res := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}
	res.CacheScope = "private"
	if caller == nil {
		return res
	}
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	rev := a.opts.Revisions.Current()
	for _, t := range a.opts.Catalog.Templates(ctx) {
		if a.visible(a.resourceDecision(ctx, caller, rev, engine.MethodTemplatesList, "", meta, templateOf(t, t.Template.URITemplate))) {
			res.ResourceTemplates = append(res.ResourceTemplates, t.Template)
		}
	}
	return res
}

// resolve is ResolveResource in the adapter's Catalog.
func (a *Adapter) resolve(ctx context.Context, uri string) *engine.Resource {
	return ResolveResource(ctx, a.opts.Catalog, uri)
}

// ResolveResource finds what a URI is in cat (docs/contract.md §16): a
// listed resource (its owner: the first upstream that lists it), else the
// first template, in configuration order, that matches it (Template set);
// nil when nothing serves it. `toolgate explain --resource` reads it too.
func ResolveResource(ctx context.Context, cat Catalog, uri string) *engine.Resource {
	for _, r := range cat.Resources(ctx) {
		if r.Resource.URI == uri {
			return resourceOf(r)
		}
	}
	for _, t := range cat.Templates(ctx) {
		tmpl, err := uritemplate.New(t.Template.URITemplate)
		if err != nil {
			continue
		}
		if tmpl.Regexp().MatchString(uri) {
			return templateOf(t, uri)
		}
	}
	return nil
}

// allowedResource resolves uri and decides it strictly: the resource
// when caller may read it, nil when it is hidden or nothing serves it
// (the same answer follows).
func (a *Adapter) allowedResource(ctx context.Context, caller *engine.Caller, method, uri string, meta mcp.Meta, rec *CatalogRecord) *engine.Resource {
	if caller == nil {
		return nil
	}
	rev := a.opts.Revisions.Current()
	rec.Revision = rev
	res := a.resolve(ctx, uri)
	if res == nil {
		rec.Outcome = engine.NoOverride
		return nil
	}
	d := a.resourceDecision(ctx, caller, rev, method, uri, meta, res)
	rec.Outcome, rec.Err = d.Outcome, d.Err
	if !d.Allowed {
		return nil
	}
	rec.Upstream, rec.Allowed = res.Upstream, true
	return res
}

func (a *Adapter) readResource(ctx context.Context, caller *engine.Caller, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, unknownResource("")
	}
	uri := req.Params.URI
	rec := &CatalogRecord{Method: engine.MethodResourcesRead, Caller: caller, Name: uri, Start: time.Now()}
	if caller != nil {
		defer a.observeCatalog(ctx, rec)
	}
	res := a.allowedResource(ctx, caller, engine.MethodResourcesRead, uri, req.Params.Meta, rec)
	if res == nil {
		return nil, unknownResource(uri)
	}
	out, err := a.opts.Catalog.ReadResource(ctx, res.Upstream, req.Params)
	if err != nil {
		rec.Err = err
		return nil, a.relayError("resources/read", err)
	}
	return out, nil
}

func (a *Adapter) subscribe(ctx context.Context, caller *engine.Caller, req *mcp.SubscribeRequest, method string, next mcp.MethodHandler) (mcp.Result, error) {
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

func (a *Adapter) complete(ctx context.Context, caller *engine.Caller, req *mcp.CompleteRequest, method string, next mcp.MethodHandler) (mcp.Result, error) {
	p := req.Params
	if p == nil || p.Ref == nil || p.Argument.Name == "" {
		return next(ctx, method, req) // the SDK's own validation answer
	}
	rec := &CatalogRecord{Method: engine.MethodComplete, Caller: caller, Start: time.Now()}
	switch p.Ref.Type {
	case "ref/prompt":
		name := p.Ref.Name
		rec.Name = name
		if caller == nil {
			return nil, unknownPrompt(name)
		}
		defer a.observeCatalog(ctx, rec)
		rev := a.opts.Revisions.Current()
		rec.Revision = rev
		d := a.promptDecision(ctx, caller, rev, engine.MethodComplete, name, nil, p.Meta)
		rec.Outcome = d.Outcome
		ok, err := d.PromptAllowed(name)
		if err != nil {
			rec.Err = err
			a.log.Error("completion/complete: grant decision failed; refused", slog.String("subject", caller.Subject), slog.Any("error", err))
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: AnswerPromptUnverified}
		}
		if !ok {
			return nil, unknownPrompt(name)
		}
		pr := rev.Prompt(name)
		rec.Upstream, rec.Allowed = pr.Upstream, true
		sent := *p
		ref := *p.Ref
		ref.Name = pr.Prompt
		sent.Ref = &ref
		res, err := a.opts.Catalog.Complete(ctx, pr.Upstream, &sent)
		if err != nil {
			rec.Err = err
			return nil, a.relayError("completion/complete", err)
		}
		return res, nil
	case "ref/resource":
		uri := p.Ref.URI
		rec.Name = uri
		if caller != nil {
			defer a.observeCatalog(ctx, rec)
		}
		var owner *CatalogTemplate
		if caller != nil {
			for _, t := range a.opts.Catalog.Templates(ctx) {
				if t.Template.URITemplate == uri {
					owner = &t
					break
				}
			}
		}
		if owner == nil {
			return nil, unknownResource(uri)
		}
		rev := a.opts.Revisions.Current()
		rec.Revision = rev
		d := a.resourceDecision(ctx, caller, rev, engine.MethodComplete, uri, p.Meta, templateOf(*owner, uri))
		rec.Outcome, rec.Err = d.Outcome, d.Err
		if !d.Allowed {
			return nil, unknownResource(uri)
		}
		rec.Upstream, rec.Allowed = owner.Upstream, true
		res, err := a.opts.Catalog.Complete(ctx, owner.Upstream, p)
		if err != nil {
			rec.Err = err
			return nil, a.relayError("completion/complete", err)
		}
		return res, nil
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
