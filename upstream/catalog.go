package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/backend"
	"github.com/toolgate/toolgate/registry"
)

// The Pool serves the prompts and resources of its importing upstreams
// (docs/contract.md §16): it is the adapter's mcpadapter.Catalog. What a
// caller may see of them is decided by the adapter; the Pool lists, routes
// and relays.
//
// Prompts are imported with the tools, into each revision
// (ImportedPrompts); resources and templates are listed on demand and kept
// per upstream session until the upstream says its list changed. A
// resource or template belongs to the first upstream, in configuration
// order, that lists it.

var _ backend.Catalog = (*Pool)(nil)

// catalog is the Pool's state for prompts and resources.
type catalog struct {
	mu       sync.Mutex
	lists    map[string]*resourceList           // by upstream: the last listing, for its session
	caps     map[string]*mcp.ServerCapabilities // by upstream: what it announced when last seen
	subs     map[[2]string]*subscription        // by upstream and URI
	warned   map[string]bool                    // conflicts already logged
	watchers map[int]func(backend.CatalogEvent)
	nextID   int
}

type resourceList struct {
	sess      *session
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// subscription counts the subscribers toolgate has for one URI of one
// upstream, and the upstream session it subscribed on.
type subscription struct {
	n    int
	sess *session
}

// catalogHandlers makes an importing upstream's client relay its prompts'
// and resources' notifications.
func (c *conn) catalogHandlers(opts *mcp.ClientOptions) {
	name := c.cfg.Name
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) {
		// Prompts are part of the revision: rebuild it, as for tools.
		if f := c.pool.opts.ToolsChanged; f != nil {
			c.pool.wg.Go(func() { f(name) })
		}
		c.pool.cat.emit(backend.CatalogEvent{Kind: backend.PromptsChanged, Upstream: name})
	}
	opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) {
		c.pool.cat.forget(name)
		c.pool.cat.emit(backend.CatalogEvent{Kind: backend.ResourcesChanged, Upstream: name})
	}
	opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		if req.Params == nil {
			return
		}
		c.pool.cat.emit(backend.CatalogEvent{Kind: backend.ResourceUpdated, Upstream: name, URI: req.Params.URI})
	}
}

func (k *catalog) emit(ev backend.CatalogEvent) {
	k.mu.Lock()
	ws := make([]func(backend.CatalogEvent), 0, len(k.watchers))
	for _, w := range k.watchers {
		ws = append(ws, w)
	}
	k.mu.Unlock()
	for _, w := range ws {
		w(ev)
	}
}

func (k *catalog) forget(name string) {
	k.mu.Lock()
	delete(k.lists, name)
	k.mu.Unlock()
}

// Watch implements mcpadapter.Catalog.
func (p *Pool) Watch(f func(backend.CatalogEvent)) (stop func()) {
	k := &p.cat
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watchers == nil {
		k.watchers = map[int]func(backend.CatalogEvent){}
	}
	id := k.nextID
	k.nextID++
	k.watchers[id] = f
	return func() {
		k.mu.Lock()
		delete(k.watchers, id)
		k.mu.Unlock()
	}
}

// catalogSession returns a live session of an importing upstream, and
// remembers what it announced.
func (c *conn) catalogSession(ctx context.Context) (*session, *mcp.ServerCapabilities, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s: %w", c.cfg.Name, err)
	}
	caps := &mcp.ServerCapabilities{}
	if ir := s.cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	k := &c.pool.cat
	k.mu.Lock()
	if k.caps == nil {
		k.caps = map[string]*mcp.ServerCapabilities{}
	}
	k.caps[c.cfg.Name] = caps
	k.mu.Unlock()
	return s, caps, nil
}

// Offers implements mcpadapter.Catalog: prompts, resources and
// completions whenever an upstream is configured with Import, up or not
// (docs/contract.md §19: one that comes up later says list_changed, which
// a client only listens for when they were announced); subscriptions
// when an importing upstream announced them when last seen, or was not
// seen yet.
func (p *Pool) Offers() backend.CatalogOffers {
	var o backend.CatalogOffers
	p.cat.mu.Lock()
	defer p.cat.mu.Unlock()
	for _, name := range p.order {
		if !p.conns[name].cfg.Import {
			continue
		}
		o.Prompts, o.Resources, o.Completions = true, true, true
		if caps := p.cat.caps[name]; caps == nil || caps.Resources != nil && caps.Resources.Subscribe {
			o.Subscribe = true // not seen yet: it may offer them
		}
	}
	return o
}

// importing returns the importing upstreams, in configuration order.
func (p *Pool) importing() []*conn {
	var out []*conn
	for _, name := range p.order {
		if c := p.conns[name]; c.cfg.Import {
			out = append(out, c)
		}
	}
	return out
}

// ImportedPrompts lists the prompts of the importing upstreams that offer
// prompts, as toolgate serves them: named PREFIX + PROMPT, in the
// upstream's section, in configuration order and then the upstream's
// order. An upstream that cannot be reached or listed contributes none
// (logged); a prompt without a name is skipped.
func (p *Pool) ImportedPrompts(ctx context.Context) []registry.Prompt {
	conns := p.importing()
	per := make([][]registry.Prompt, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			ctx, cancel := c.requestContext(ctx)
			defer cancel()
			s, caps, err := c.catalogSession(ctx)
			switch {
			case errors.Is(err, errNotUp):
				return // its prompts come when it is up (Options.ToolsChanged)
			case err != nil:
				p.log.Error("upstream: import: prompts unavailable", slog.String("upstream", c.cfg.Name), slog.Any("error", err))
				return
			}
			if caps.Prompts == nil {
				return
			}
			if l := c.listingSession(); l != nil {
				s = l
			}
			listed, err := listPrompts(ctx, s.cs)
			if err != nil {
				p.log.Error("upstream: import: prompts/list failed", slog.String("upstream", c.cfg.Name), slog.Any("error", err))
				return
			}
			for _, l := range listed {
				if l.prompt == nil || l.prompt.Name == "" {
					continue
				}
				per[i] = append(per[i], importPrompt(&c.cfg, l.prompt, l.def))
			}
		})
	}
	wg.Wait()
	var out []registry.Prompt
	for _, ps := range per {
		out = append(out, ps...)
	}
	return out
}

// listedPrompt is a prompt as an upstream listed it: decoded, and its
// definition as sent (nil when it could not be read apart).
type listedPrompt struct {
	prompt *mcp.Prompt
	def    json.RawMessage
}

// listPrompts lists cs's prompts, page after page.
func listPrompts(ctx context.Context, cs *mcp.ClientSession) ([]listedPrompt, error) {
	var out []listedPrompt
	params := &mcp.ListPromptsParams{}
	for {
		sentCtx, sent := withSent(ctx)
		res, err := cs.ListPrompts(sentCtx, params)
		if err != nil {
			return nil, err
		}
		var raw struct {
			Prompts []json.RawMessage `json:"prompts"`
		}
		if r := sent.raw.Load(); r == nil || json.Unmarshal(*r, &raw) != nil || len(raw.Prompts) != len(res.Prompts) {
			raw.Prompts = make([]json.RawMessage, len(res.Prompts))
		}
		for i, pr := range res.Prompts {
			out = append(out, listedPrompt{pr, raw.Prompts[i]})
		}
		if res.NextCursor == "" {
			return out, nil
		}
		params = &mcp.ListPromptsParams{Cursor: res.NextCursor}
	}
}

func importPrompt(cfg *Config, pr *mcp.Prompt, def json.RawMessage) registry.Prompt {
	out := registry.Prompt{
		Name:        cfg.prefix() + pr.Name,
		Upstream:    cfg.Name,
		Prompt:      pr.Name,
		Section:     cfg.section(),
		Description: pr.Description,
	}
	for _, a := range pr.Arguments {
		if a != nil {
			out.Arguments = append(out.Arguments, registry.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
	}
	out.Definition = def
	if len(def) == 0 {
		out.Definition, _ = json.Marshal(pr)
	}
	return out
}

// MergeImports is MergeRows, then the imported prompts. A name that two
// upstreams would define (a tool, or a prompt) is an error naming both
// (docs/contract.md §16); a registry row keeps its name (MergeRows).
func MergeImports(reg *registry.Registry, rows []registry.Tool, prompts []registry.Prompt) (*registry.Registry, error) {
	var errs []error
	tools := map[string]string{}
	for _, t := range rows {
		up := ""
		if t.Imported != nil {
			up = t.Imported.Upstream
		}
		if prev, ok := tools[t.Name]; ok && prev != up {
			errs = append(errs, fmt.Errorf("%w: tool %q is defined by upstream %s and by upstream %s (set a prefix)", ErrConfig, t.Name, prev, up))
			continue
		}
		tools[t.Name] = up
	}
	seen := map[string]string{}
	for _, pr := range prompts {
		if prev, ok := seen[pr.Name]; ok {
			errs = append(errs, fmt.Errorf("%w: prompt %q is defined by upstream %s and by upstream %s (set a prefix)", ErrConfig, pr.Name, prev, pr.Upstream))
			continue
		}
		seen[pr.Name] = pr.Upstream
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := MergeRows(reg, rows)
	out.Prompts = append([]registry.Prompt(nil), prompts...)
	return out, nil
}

func (p *Pool) conn(name string) (*conn, error) {
	c, ok := p.conns[name]
	if !ok || !c.cfg.Import {
		return nil, fmt.Errorf("upstream %s: not an importing upstream", name)
	}
	return c, nil
}

// GetPrompt implements mcpadapter.Catalog: prompts/get of the prompt on
// its upstream, under its own name there.
func (p *Pool) GetPrompt(ctx context.Context, pr *registry.Prompt, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return catalogRequest(ctx, p, pr.Upstream, "prompts/get "+pr.Prompt, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		sent := *params
		sent.Name, sent.Meta = pr.Prompt, catalogMeta(ctx)
		return cs.GetPrompt(ctx, &sent)
	})
}

// catalogRequest sends one request through send on the catalog session of
// the importing upstream named upstream, within its request timeout. A
// failed request counts against that session; its error names the
// upstream and what was asked.
func catalogRequest[R any](ctx context.Context, p *Pool, upstream, what string, send func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	var none R
	c, err := p.conn(upstream)
	if err != nil {
		return none, err
	}
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	s, _, err := c.catalogSession(ctx)
	if err != nil {
		return none, err
	}
	sentCtx, sent := withSent(ctx)
	res, err := send(sentCtx, s.cs)
	if err != nil {
		c.failed(ctx, s, err)
		return none, fmt.Errorf("upstream %s: %s: %w", c.cfg.Name, what, err)
	}
	sent.keep(ctx, res)
	return res, nil
}

// listing returns the upstream's resources and templates, listing them on
// its current session when not known yet.
func (c *conn) listing(ctx context.Context) (*resourceList, error) {
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	s, caps, err := c.catalogSession(ctx)
	if err != nil {
		return nil, err
	}
	k := &c.pool.cat
	k.mu.Lock()
	l := k.lists[c.cfg.Name]
	k.mu.Unlock()
	if l != nil && l.sess == s {
		return l, nil
	}
	l = &resourceList{sess: s, resources: []*mcp.Resource{}, templates: []*mcp.ResourceTemplate{}}
	if caps.Resources != nil {
		if l.resources, err = nonNil(s.cs.Resources(ctx, nil)); err != nil {
			c.failed(ctx, s, err)
			return nil, fmt.Errorf("upstream %s: resources/list: %w", c.cfg.Name, err)
		}
		if l.templates, err = nonNil(s.cs.ResourceTemplates(ctx, nil)); err != nil {
			c.failed(ctx, s, err)
			return nil, fmt.Errorf("upstream %s: resources/templates/list: %w", c.cfg.Name, err)
		}
	}
	k.mu.Lock()
	if k.lists == nil {
		k.lists = map[string]*resourceList{}
	}
	k.lists[c.cfg.Name] = l
	k.mu.Unlock()
	return l, nil
}

// listings lists every importing upstream, concurrently; one that fails
// contributes nothing (logged).
func (p *Pool) listings(ctx context.Context) ([]*conn, []*resourceList) {
	conns := p.importing()
	lists := make([]*resourceList, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			l, err := c.listing(ctx)
			if err != nil {
				p.log.Error("upstream: resources unavailable", slog.String("upstream", c.cfg.Name), slog.Any("error", err))
				return
			}
			lists[i] = l
		})
	}
	wg.Wait()
	return conns, lists
}

// warnConflict logs, once, that an upstream lists what an earlier one
// owns.
func (p *Pool) warnConflict(what, key, owner, loser string) {
	id := what + "\x00" + key + "\x00" + loser
	p.cat.mu.Lock()
	if p.cat.warned == nil {
		p.cat.warned = map[string]bool{}
	}
	seen := p.cat.warned[id]
	p.cat.warned[id] = true
	p.cat.mu.Unlock()
	if !seen {
		p.log.Warn("upstream: two upstreams list one "+what+"; the first in configuration order keeps it",
			slog.String(what, key), slog.String("upstream", owner), slog.String("ignored", loser))
	}
}

// Resources implements mcpadapter.Catalog.
func (p *Pool) Resources(ctx context.Context) []backend.CatalogResource {
	conns, lists := p.listings(ctx)
	return owned(p, conns, lists, "uri",
		func(l *resourceList) []*mcp.Resource { return l.resources },
		func(r *mcp.Resource) string { return r.URI },
		func(c *conn, r *mcp.Resource) backend.CatalogResource {
			return backend.CatalogResource{Upstream: c.cfg.Name, Section: c.cfg.section(), Resource: r}
		})
}

// Templates implements mcpadapter.Catalog.
func (p *Pool) Templates(ctx context.Context) []backend.CatalogTemplate {
	conns, lists := p.listings(ctx)
	return owned(p, conns, lists, "template",
		func(l *resourceList) []*mcp.ResourceTemplate { return l.templates },
		func(t *mcp.ResourceTemplate) string { return t.URITemplate },
		func(c *conn, t *mcp.ResourceTemplate) backend.CatalogTemplate {
			return backend.CatalogTemplate{Upstream: c.cfg.Name, Section: c.cfg.section(), Template: t}
		})
}

// owned lists the items of the upstreams' listings, each key kept by the
// first upstream in configuration order that lists it (a later one is
// warned about and skipped).
func owned[T, O any](p *Pool, conns []*conn, lists []*resourceList, what string,
	items func(*resourceList) []T, key func(T) string, out func(*conn, T) O) []O {
	owner := map[string]string{}
	var res []O
	for i, l := range lists {
		if l == nil {
			continue
		}
		c := conns[i]
		for _, it := range items(l) {
			k := key(it)
			if o, ok := owner[k]; ok {
				if o != c.cfg.Name {
					p.warnConflict(what, k, o, c.cfg.Name)
				}
				continue
			}
			owner[k] = c.cfg.Name
			res = append(res, out(c, it))
		}
	}
	return res
}

// nonNil collects the entries seq lists that are not nil, in order, into
// a slice that is never nil; the first error ends the listing.
func nonNil[T any](seq iter.Seq2[*T, error]) ([]*T, error) {
	out := []*T{}
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		if v != nil {
			out = append(out, v)
		}
	}
	return out, nil
}

// ReadResource implements mcpadapter.Catalog.
func (p *Pool) ReadResource(ctx context.Context, upstream string, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return catalogRequest(ctx, p, upstream, "resources/read", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		sent := *params
		sent.Meta = catalogMeta(ctx)
		return cs.ReadResource(ctx, &sent)
	})
}

// Complete implements mcpadapter.Catalog.
func (p *Pool) Complete(ctx context.Context, upstream string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return catalogRequest(ctx, p, upstream, "completion/complete", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
		sent := *params
		sent.Meta = catalogMeta(ctx)
		return cs.Complete(ctx, &sent)
	})
}

// catalogMeta is the _meta a prompts/get, resources/read or
// completion/complete carries upstream: the trace context, nothing of the
// client's _meta. As for a relayed tools/call, the client's entries stay
// with toolgate: the policy decided on the bounded _meta (docs/contract.md
// §3), not on what the client sent; the catalog session is every caller's;
// and the client's protocol entries are of its own revision, not the
// upstream session's.
func catalogMeta(ctx context.Context) mcp.Meta { return traceMeta(ctx) }

// Subscribe implements mcpadapter.Catalog: the upstream is subscribed to
// uri once, however many sessions subscribe through toolgate (and again
// after its session was replaced).
func (p *Pool) Subscribe(ctx context.Context, upstream, uri string) error {
	c, err := p.conn(upstream)
	if err != nil {
		return err
	}
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	s, _, err := c.catalogSession(ctx)
	if err != nil {
		return err
	}
	key := [2]string{upstream, uri}
	p.cat.mu.Lock()
	sub := p.cat.subs[key]
	fresh := sub == nil || sub.sess != s
	p.cat.mu.Unlock()
	if fresh {
		if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			c.failed(ctx, s, err)
			return fmt.Errorf("upstream %s: resources/subscribe: %w", upstream, err)
		}
	}
	p.cat.mu.Lock()
	defer p.cat.mu.Unlock()
	if p.cat.subs == nil {
		p.cat.subs = map[[2]string]*subscription{}
	}
	if sub = p.cat.subs[key]; sub == nil {
		sub = &subscription{}
		p.cat.subs[key] = sub
	}
	sub.n++
	sub.sess = s
	return nil
}

// Unsubscribe implements mcpadapter.Catalog: the upstream is
// unsubscribed when the last subscriber through toolgate is gone.
func (p *Pool) Unsubscribe(ctx context.Context, upstream, uri string) error {
	c, err := p.conn(upstream)
	if err != nil {
		return err
	}
	key := [2]string{upstream, uri}
	p.cat.mu.Lock()
	sub := p.cat.subs[key]
	last := false
	if sub != nil {
		sub.n--
		if sub.n <= 0 {
			delete(p.cat.subs, key)
			last = true
		}
	}
	p.cat.mu.Unlock()
	if !last || !sub.sess.alive() {
		return nil
	}
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	if err := sub.sess.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		c.failed(ctx, sub.sess, err)
		return fmt.Errorf("upstream %s: resources/unsubscribe: %w", upstream, err)
	}
	return nil
}
