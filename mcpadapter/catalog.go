package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/backend"
	"github.com/toolgate/toolgate/internal/jsonx"
)

// Catalog is where the prompts, resources, resource templates and
// completions the adapter governs come from (docs/contract.md §16): the
// upstream pool's importing upstreams. The adapter decides what each
// caller may see; a Catalog lists, routes and relays. Implementations are
// safe for concurrent use.
type Catalog = backend.Catalog

// CatalogResource is a resource and the upstream that owns it.
type CatalogResource = backend.CatalogResource

// CatalogTemplate is a resource template and the upstream that owns it.
type CatalogTemplate = backend.CatalogTemplate

// CatalogOffers is what a Catalog's upstreams announce.
type CatalogOffers = backend.CatalogOffers

// CatalogEventKind says what changed behind a Catalog.
type CatalogEventKind = backend.CatalogEventKind

const (
	// PromptsChanged: an upstream's notifications/prompts/list_changed.
	PromptsChanged = backend.PromptsChanged
	// ResourcesChanged: an upstream's notifications/resources/list_changed.
	ResourcesChanged = backend.ResourcesChanged
	// ResourceUpdated: an upstream's notifications/resources/updated for URI.
	ResourceUpdated = backend.ResourceUpdated
)

// CatalogEvent is one change behind a Catalog.
type CatalogEvent = backend.CatalogEvent

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
// completions are decided per caller (by the receiving middleware it
// returns, nil without a Catalog); the upstreams' list_changed and
// updates reach the sessions they concern.
func (a *Adapter) installCatalog(s *mcp.Server) mcp.Middleware {
	if a.opts.Catalog == nil {
		return nil
	}
	middleware := func(next mcp.MethodHandler) mcp.MethodHandler {
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
			ctx, _ = withSentSlot(ctx)
			res, err = a.serveCatalog(ctx, method, req, next)
			if err != nil || res == nil {
				return res, err
			}
			return answerSent(ctx, req, res), nil
		}
	}
	s.AddSendingMiddleware(a.filterUpdates)
	a.opts.Catalog.Watch(func(ev CatalogEvent) { a.catalogEvent(s, ev) })
	return middleware
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
	b, _ := jsonx.Marshal(m)
	return b
}

func (a *Adapter) serveCatalog(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	caller, _ := a.opts.Caller(ctx, req)
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

func (a *Adapter) observeCatalog(ctx context.Context, rec *hooks.CatalogRecord) {
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
