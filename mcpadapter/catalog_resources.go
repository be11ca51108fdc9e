package mcpadapter

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/toolcall"
)

// resourceDecision decides one resource (or template) for caller.
func (a *Adapter) resourceDecision(ctx context.Context, caller *toolcall.Caller, rev *engine.Revision, method, uri string, meta mcp.Meta, res *engine.Resource) engine.ResourceDecision {
	d := rev.GrantResource(ctx, caller, engine.Request{Method: method, URI: uri, Meta: engine.BoundMeta(rawMeta(meta))}, res)
	if d.Outcome == engine.Failed {
		a.log.Error(method+": resource decision failed", slog.String("subject", caller.Subject),
			slog.String("revision", rev.String()), slog.String("upstream", res.Upstream), slog.Any("error", d.Err))
	}
	return d
}

// visible is the lenient reading of a listing.
func (a *Adapter) visible(d engine.ResourceDecision) bool {
	if d.Outcome == engine.Failed && a.opts.ListFallback == hooks.ListFallbackNone {
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

func (a *Adapter) listResources(ctx context.Context, caller *toolcall.Caller, req *mcp.ListResourcesRequest) *mcp.ListResourcesResult {
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

func (a *Adapter) listTemplates(ctx context.Context, caller *toolcall.Caller, req *mcp.ListResourceTemplatesRequest) *mcp.ListResourceTemplatesResult {
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
func (a *Adapter) allowedResource(ctx context.Context, caller *toolcall.Caller, method, uri string, meta mcp.Meta, rec *hooks.CatalogRecord) *engine.Resource {
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

func (a *Adapter) readResource(ctx context.Context, caller *toolcall.Caller, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, unknownResource("")
	}
	uri := req.Params.URI
	rec := &hooks.CatalogRecord{Method: engine.MethodResourcesRead, Caller: caller, Name: uri, Start: time.Now()}
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
	return catalogResult(ctx, a, engineRevision(rec.Revision), caller, engine.Request{Method: engine.MethodResourcesRead, URI: uri, Meta: engine.BoundMeta(rawMeta(req.Params.Meta))}, out, rec)
}

func (a *Adapter) complete(ctx context.Context, caller *toolcall.Caller, req *mcp.CompleteRequest, method string, next mcp.MethodHandler) (mcp.Result, error) {
	p := req.Params
	if p == nil || p.Ref == nil || p.Argument.Name == "" {
		return next(ctx, method, req) // the SDK's own validation answer
	}
	rec := &hooks.CatalogRecord{Method: engine.MethodComplete, Caller: caller, Start: time.Now()}
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
		return catalogResult(ctx, a, rev, caller, engine.Request{Method: engine.MethodComplete, Prompt: name, Meta: engine.BoundMeta(rawMeta(p.Meta))}, res, rec)
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
		return catalogResult(ctx, a, rev, caller, engine.Request{Method: engine.MethodComplete, URI: uri, Meta: engine.BoundMeta(rawMeta(p.Meta))}, res, rec)
	}
	return next(ctx, method, req)
}
