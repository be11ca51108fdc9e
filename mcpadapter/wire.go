package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK decodes request params into typed structs before any middleware
// runs: a numeric tool name, or a _meta that is not an object, would be a
// JSON-RPC error there, and _meta would lose its wire order in a Go map.
// The wire layer below rewrites tools/call and tools/list params before the
// SDK sees them: a name that is an integer becomes its decimal string, one
// that is neither is removed and flagged, and the raw _meta travels as a
// string under wireKey, from which the middleware restores it.

// wireKey is the _meta entry that carries what the wire layer saw. The
// middleware removes it before anything else reads _meta; a client that sends
// it has it replaced.
const wireKey = "toolgate.internal/wire"

type wireInfo struct {
	// Meta is the _meta as sent, raw ("" when absent).
	Meta string `json:"meta"`
	// NameInvalid: the name was missing or neither a string nor an integer.
	NameInvalid bool `json:"nameInvalid,omitempty"`
}

var integerName = regexp.MustCompile(`^-?[0-9]+$`)

// rewriteParams returns the params of a tools/call or tools/list request as
// the SDK can decode them, carrying the wire facts in _meta.
func rewriteParams(method string, params json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	info := wireInfo{}
	if raw, ok := obj["_meta"]; ok {
		info.Meta = string(raw)
	}
	if method == "tools/call" {
		name := bytes.TrimSpace(obj["name"])
		switch {
		case len(name) > 0 && name[0] == '"':
			var s string
			if json.Unmarshal(name, &s) != nil {
				info.NameInvalid = true
				delete(obj, "name")
			}
		case integerName.Match(name):
			obj["name"], _ = json.Marshal(string(name))
		default:
			info.NameInvalid = true
			delete(obj, "name")
		}
	}
	// Keep the entries the SDK reads itself (protocol version, client info
	// of the 2026-07-28 revision), when _meta is an object.
	sdkMeta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			for k, v := range m {
				if isProtocolKey(k) {
					sdkMeta[k] = v
				}
			}
		}
	}
	sdkMeta[wireKey], _ = json.Marshal(info)
	obj["_meta"], _ = json.Marshal(sdkMeta)
	dropUndecodable(method, obj)
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}

// dropUndecodable removes the params entries that the SDK's params type
// for method cannot decode (a number for tools/call's requestState or
// tools/list's cursor, a case variant of a known field holding the wrong
// type: encoding/json matches field names case-insensitively). Left in, the
// SDK answers the whole request with a JSON-RPC error whose text quotes the
// params, the wire entry and Go type names. The adapter reads none of these
// entries, so dropping one changes no answer. name, _meta and arguments
// were handled above or take any JSON value.
func dropUndecodable(method string, obj map[string]json.RawMessage) {
	for k, v := range obj {
		switch k {
		case "name", "_meta", "arguments":
			continue
		}
		one, err := json.Marshal(map[string]json.RawMessage{k: v})
		if err != nil {
			delete(obj, k)
			continue
		}
		var target any = &mcp.CallToolParamsRaw{}
		if method == "tools/list" {
			target = &mcp.ListToolsParams{}
		}
		if json.Unmarshal(one, target) != nil {
			delete(obj, k)
		}
	}
}

func isProtocolKey(k string) bool {
	const prefix = "io.modelcontextprotocol/"
	return len(k) > len(prefix) && k[:len(prefix)] == prefix
}

// takeWire removes the wire entry from a request's _meta and returns it.
// Without one (the request did not pass the wire layer) it reconstructs
// what it can from the decoded params; _meta order is then lost.
func takeWire(meta mcp.Meta) (wireInfo, bool) {
	raw, ok := meta[wireKey]
	if !ok {
		return wireInfo{}, false
	}
	delete(meta, wireKey)
	var info wireInfo
	switch v := raw.(type) {
	case map[string]any:
		info.Meta, _ = v["meta"].(string)
		info.NameInvalid, _ = v["nameInvalid"].(bool)
	default:
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &info)
	}
	return info, true
}

func rewriteMessage(msg jsonrpc.Message) jsonrpc.Message {
	if req, ok := msg.(*jsonrpc.Request); ok && (req.Method == "tools/call" || req.Method == "tools/list") {
		req.Params = rewriteParams(req.Method, req.Params)
	}
	return msg
}

// WrapTransport returns a transport whose incoming tools/call and tools/list
// requests pass the wire layer. Serve every transport through it (stdio,
// in-memory, a custom one); HTTP goes through WrapHTTP instead.
func WrapTransport(t mcp.Transport) mcp.Transport { return &wireTransport{t} }

type wireTransport struct{ mcp.Transport }

func (w *wireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wireConn{c}, nil
}

type wireConn struct{ mcp.Connection }

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return nil, err
	}
	return rewriteMessage(msg), nil
}

// maxBody bounds an HTTP request body read by the wire layer.
const maxBody = 32 << 20

// WrapHTTP returns a handler whose POSTed JSON-RPC messages (single or
// batch) pass the wire layer before h sees them.
func WrapHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		r.Body.Close()
		if err != nil {
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		if len(body) > maxBody {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		body = rewriteBody(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}

func rewriteBody(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		for i, m := range batch {
			batch[i] = rewriteRaw(m)
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return body
		}
		return out
	}
	return rewriteRaw(body)
}

func rewriteRaw(raw []byte) []byte {
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return raw
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || (req.Method != "tools/call" && req.Method != "tools/list") {
		return raw
	}
	rewriteMessage(req)
	out, err := jsonrpc.EncodeMessage(req)
	if err != nil {
		return raw
	}
	return out
}
