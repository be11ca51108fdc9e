package mcpadapter

import (
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/lru"
)

// On the 2026-07-28 revision a client sends its capabilities with every
// request, in _meta. The go-sdk's ServerRequest.ClientCapabilities decodes
// them anew on each call: an encode and a decode through the SDK's JSON,
// whose decoder allocates a 32 KiB buffer, on every relayed call. A client
// sends the same capabilities call after call, so the decoded value is
// kept, keyed by the capabilities' JSON encoding.
var metaCapabilities = lru.New[*capsEntry](metaCapabilitiesMax)

const (
	// metaCapabilitiesMax bounds the distinct capability sets kept.
	metaCapabilitiesMax = 256
	// metaCapabilitiesMaxKey: larger capabilities are decoded per call,
	// as the SDK does, and not kept.
	metaCapabilitiesMaxKey = 4 << 10
)

// capsEntry is a kept decode: nil caps when the SDK could not read the
// value (the SDK then falls back to the session's).
type capsEntry struct{ caps *mcp.ClientCapabilities }

// requestCapabilities is what the go-sdk reads as the capabilities req
// carries in its _meta (nil when none, or none it can read), as
// ServerRequest.ClientCapabilities without a session answers, each
// distinct value decoded by the SDK once. The result is the caller's own
// copy of the top level; what it points to is shared and must not be
// modified.
func requestCapabilities(req *mcp.CallToolRequest) *mcp.ClientCapabilities {
	if req == nil || req.Params == nil {
		return nil
	}
	raw, ok := req.Params.Meta[mcp.MetaKeyClientCapabilities]
	if !ok || raw == nil {
		return nil
	}
	if _, isMap := raw.(map[string]any); !isMap {
		// A typed value (in process), or a value the SDK will refuse:
		// the SDK's own answer, not kept.
		return sdkRequestCapabilities(req.Params)
	}
	key, ok := appendKey(make([]byte, 0, 128), raw)
	if !ok || len(key) > metaCapabilitiesMaxKey {
		return sdkRequestCapabilities(req.Params)
	}
	e := metaCapabilities.Get(key)
	if e == nil {
		e = metaCapabilities.Put(key, &capsEntry{caps: sdkRequestCapabilities(req.Params)})
	}
	if e.caps == nil {
		return nil
	}
	c := *e.caps
	return &c
}

// sdkRequestCapabilities is the go-sdk's reading of params' _meta
// capabilities: with no session, it has nothing to fall back to.
func sdkRequestCapabilities(params *mcp.CallToolParamsRaw) *mcp.ClientCapabilities {
	return (&mcp.ServerRequest[*mcp.CallToolParamsRaw]{Params: params}).ClientCapabilities()
}

// appendKey appends a key of v, a value as JSON decodes into any, to b:
// equal values, equal keys, and different values, different keys (maps
// with their keys sorted, strings quoted, numbers in full). ok is false
// for a value of another type.
func appendKey(b []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		return strconv.AppendBool(b, v), true
	case float64:
		return strconv.AppendFloat(append(b, '#'), v, 'g', -1, 64), true
	case string:
		return strconv.AppendQuote(b, v), true
	case []any:
		b = append(b, '[')
		for _, e := range v {
			if b, ok = appendKey(b, e); !ok {
				return b, false
			}
			b = append(b, ',')
		}
		return append(b, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for _, k := range keys {
			b = append(strconv.AppendQuote(b, k), ':')
			if b, ok = appendKey(b, v[k]); !ok {
				return b, false
			}
			b = append(b, ',')
		}
		return append(b, '}'), true
	}
	return b, false
}
