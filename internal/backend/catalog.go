package backend

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
