package mcpadapter

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/wire"
)

// The SDK decodes request params into typed structs before any middleware
// runs: a numeric tool name, or a _meta that is not an object, would be a
// JSON-RPC error there, and _meta would lose its wire order in a Go map.
// The wire layer (internal/wire) rewrites tools/call and tools/list params
// before the SDK sees them; LayerWire, in every governed server's list
// outside each layer that reads _meta or the name (NewServerWith), takes
// what it carried and hands it on.

// WrapTransport returns a transport whose incoming tools/call and tools/list
// requests pass the wire layer. Serve every transport through it (stdio,
// in-memory, a custom one); HTTP goes through WrapHTTP instead.
func WrapTransport(t mcp.Transport) mcp.Transport { return wire.Transport(t) }

// WrapHTTP returns a handler whose POSTed JSON-RPC messages (single or
// batch) pass the wire layer before h sees them. The body is read once,
// through a limit of MaxBodyBytes (HTTP 413 beyond); a batch of more than
// MaxBatch messages gets HTTP 400 with a JSON-RPC error of code -32600 and
// id null, and none of its messages runs. A body that cannot be read (the
// client went away, or the server's read deadline passed) gets HTTP 400
// (408 when the read deadline passed) and h is not called.
func WrapHTTP(h http.Handler) http.Handler { return wire.Handler(h) }

// MaxBodyBytes bounds an HTTP request body (docs/contract.md §11): WrapHTTP answers
// HTTP 413 to a longer one, before reading it when Content-Length says so.
const MaxBodyBytes = wire.MaxBodyBytes

// MaxBatch bounds the messages of one JSON-RPC batch (the 2025-03-26
// revision has batches); see WrapHTTP.
const MaxBatch = wire.MaxBatch
