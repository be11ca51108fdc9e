package upstream

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/wire"
)

// A 2026-07-28 server rejects a tools/call of a tool with x-mcp-header
// annotations unless the request carries their Mcp-Param headers. The
// go-sdk client adds them only for tools its own session listed; a
// caller's session relays calls without listing, so the relay hands the
// headers, made from the upstream's listed definition, to the HTTP client
// through the call's context.

type paramHeadersKey struct{}

// withParamHeaders returns ctx carrying the Mcp-Param headers of a call of
// t (nil: none) with args.
func withParamHeaders(ctx context.Context, t *mcp.Tool, args any) context.Context {
	if t == nil || t.InputSchema == nil {
		return ctx
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return ctx
	}
	a, err := json.Marshal(args)
	if err != nil {
		return ctx
	}
	h := wire.ParamHeaders(schema, a)
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, paramHeadersKey{}, h)
}

// paramHeaderTransport sets the Mcp-Param headers of the request's
// context on a 2026-07-28 tools/call.
type paramHeaderTransport struct{ next http.RoundTripper }

func (t paramHeaderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h, _ := r.Context().Value(paramHeadersKey{}).(map[string]string)
	if len(h) > 0 && r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "tools/call" {
		r = r.Clone(r.Context())
		for k, v := range h {
			if r.Header.Get(k) == "" {
				r.Header.Set(k, v)
			}
		}
	}
	return t.next.RoundTrip(r)
}

// withParamHeaderTransport returns c sending the Mcp-Param headers
// withParamHeaders put in a request's context.
func withParamHeaderTransport(c *http.Client) *http.Client {
	cc := *c
	next := cc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc.Transport = paramHeaderTransport{next: next}
	return &cc
}
