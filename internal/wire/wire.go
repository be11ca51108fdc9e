// Package wire is the layer between an MCP transport and the go-sdk that
// keeps what the SDK's typed decoding would lose (docs/contract.md §5 step 1, _meta in
// wire order). mcpadapter's WrapTransport and WrapHTTP put requests
// through it; its Middleware (mcpadapter.LayerWire) is the one reader of
// what it kept, and hands it on typed to the layers inside (InfoOf).
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/internal/metabound"
)

// The SDK decodes request params into typed structs before any middleware
// runs: a numeric tool name, or a _meta that is not an object, would be a
// JSON-RPC error there, and _meta would lose its wire order in a Go map.
// The wire layer below rewrites tools/call and tools/list params before the
// SDK sees them: a name that is an integer becomes its decimal string, one
// that is neither is removed and flagged, and the raw _meta travels as a
// string under Key, which Middleware takes and hands on.

// Key is the _meta entry that carries what the wire layer saw. Middleware
// removes it before anything else reads _meta; a client that sends it has
// it replaced.
const Key = "toolgate.internal/wire"

// Info is what the wire layer saw of a request.
type Info struct {
	// Meta is the _meta as sent, raw ("" when absent).
	Meta string `json:"meta"`
	// NameInvalid: the name was missing or neither a string nor an integer.
	NameInvalid bool `json:"nameInvalid,omitempty"`
	// InputResponsesInvalid: a tools/call's inputResponses was there and
	// not a JSON object (null, a number, ...); it was removed.
	InputResponsesInvalid bool `json:"inputResponsesInvalid,omitempty"`
}

var integerName = regexp.MustCompile(`^-?[0-9]+$`)

// rewriteParams returns the params of a tools/call or tools/list request as
// the SDK can decode them, carrying the wire facts in _meta.
func rewriteParams(method string, params json.RawMessage) json.RawMessage {
	if out, ok := rewriteParamsFast(method, params); ok {
		return out
	}
	return rewriteParamsFull(method, params)
}

// rewriteParamsFull is rewriteParams for any params: it decodes them into a
// map and encodes them again.
func rewriteParamsFull(method string, params json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	info := Info{}
	if raw, ok := obj["_meta"]; ok && utf8.Valid(raw) {
		// Invalid UTF-8 is carried as no _meta: the bounded _meta of
		// either is {} (docs/contract.md §3), where the wire entry's
		// string would have carried U+FFFD in its place.
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
			obj["name"], _ = jsonx.Marshal(string(name))
		default:
			info.NameInvalid = true
			delete(obj, "name")
		}
		if raw, ok := obj["inputResponses"]; ok {
			if v := bytes.TrimSpace(raw); len(v) == 0 || v[0] != '{' {
				// The 2026-07-28 revision answers it with invalid params
				// (Middleware); the SDK would drop null and refuse a
				// number with a text quoting the params.
				info.InputResponsesInvalid = true
				delete(obj, "inputResponses")
			}
		}
	}
	// Keep the entries the SDK reads itself (protocol version, client info
	// of the 2026-07-28 revision) and the progressToken (a method reports
	// progress with it, the relay sends it upstream: docs/relay.md), as
	// the policy sees them (protocolEntries).
	sdkMeta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok {
		for _, e := range protocolEntries(raw) {
			sdkMeta[e.key] = e.value
		}
	}
	sdkMeta[Key], _ = jsonx.Marshal(info)
	obj["_meta"], _ = jsonx.Marshal(sdkMeta)
	dropUndecodable(method, obj)
	// jsonx, not json.Marshal: the values are kept as sent, <, > and &
	// too (json.Marshal escapes them even in a json.RawMessage).
	out, err := jsonx.Marshal(obj)
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
//
// A case variant of _meta ("_Meta", "_META") goes whatever it holds: the
// SDK decodes it into the same map as _meta, adding entries (a
// progressToken) the policy never saw, which reads _meta alone.
func dropUndecodable(method string, obj map[string]json.RawMessage) {
	for k, v := range obj {
		switch {
		case k == "name" || k == "_meta" || k == "arguments":
			continue
		case strings.EqualFold(k, "_meta"):
			delete(obj, k)
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

// progressTokenKey is the _meta entry of a request's progress token.
const progressTokenKey = "progressToken"

// metaEntry is one entry of a bounded _meta.
type metaEntry struct {
	key   string
	value json.RawMessage
}

// protocolEntries are the entries of the raw _meta meta that the SDK and
// a method read (the io.modelcontextprotocol/ keys and progressToken),
// taken from the bounded _meta the policy sees (docs/contract.md §3,
// metabound.Bound, as engine.BoundMeta): a key sent twice is its first
// occurrence, an entry the bounds drop (too deep, too long, a number the
// policy cannot represent, past the 32 kept) is dropped for them too, and
// a _meta that is not a valid JSON object keeps none. So what runs reads
// exactly the entries the policy saw.
func protocolEntries(meta []byte) []metaEntry {
	all := metabound.Bound(meta, func(k string, v json.RawMessage) metaEntry { return metaEntry{k, v} })
	kept := all[:0]
	for _, e := range all {
		if isProtocolKey(e.key) || e.key == progressTokenKey {
			kept = append(kept, e)
		}
	}
	return kept
}

func isProtocolKey(k string) bool {
	const prefix = "io.modelcontextprotocol/"
	return len(k) > len(prefix) && k[:len(prefix)] == prefix
}

func rewriteMessage(msg jsonrpc.Message) jsonrpc.Message {
	if req, ok := msg.(*jsonrpc.Request); ok && (req.Method == "tools/call" || req.Method == "tools/list") {
		req.Params = rewriteParams(req.Method, req.Params)
	}
	return msg
}

// Transport returns a transport whose incoming tools/call and tools/list
// requests pass the wire layer.
func Transport(t mcp.Transport) mcp.Transport { return &wireTransport{t} }

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

// MaxBodyBytes bounds an HTTP request body (docs/contract.md §11): Handler answers
// HTTP 413 to a longer one, before reading it when Content-Length says so.
const MaxBodyBytes = 4 << 20

// MaxBatch bounds the messages of one JSON-RPC batch (the 2025-03-26
// revision has batches). Handler answers a longer batch with HTTP 400 and
// a JSON-RPC error of code -32600 (invalid request) and id null, and runs
// none of its messages.
const MaxBatch = 100

// ErrBatchTooLarge is RewriteBody's error for a batch of more than MaxBatch
// messages.
var ErrBatchTooLarge = fmt.Errorf("batch of more than %d messages", MaxBatch)

// Handler returns a handler whose POSTed JSON-RPC messages (single or
// batch) pass the wire layer before h sees them. The body is read once,
// through a limit of MaxBodyBytes (HTTP 413 beyond), then handed to
// RewriteBody; a batch over MaxBatch gets HTTP 400. A body that cannot be
// read (the client went away, or the server's read deadline passed) gets
// HTTP 400 (408 when the read deadline passed) and h is not called. Every
// event stream h answers opens with the SSE retry field (SSERetry).
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w = &retryWriter{ResponseWriter: w}
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > MaxBodyBytes {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		body, err := readBody(r.Body, r.ContentLength)
		r.Body.Close()
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		case errors.As(err, &netErr) && netErr.Timeout():
			http.Error(w, "request body not received in time", http.StatusRequestTimeout)
			return
		case err != nil:
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		body, err = RewriteBody(body)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg, _ := json.Marshal(err.Error())
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":%s}}`+"\n", msg)
			return
		}
		rb := &bodyReader{}
		rb.Reset(body)
		r.Body = rb
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}

// bodyReader is the rewritten body: io.NopCloser(bytes.NewReader(b)) in
// one allocation.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// readBody reads r through the MaxBodyBytes limit into one buffer, sized
// once when the length is known.
func readBody(r io.Reader, length int64) ([]byte, error) {
	lr := &maxReader{r: r, n: MaxBodyBytes}
	if length <= 0 {
		return io.ReadAll(lr)
	}
	var buf bytes.Buffer
	buf.Grow(int(length) + bytes.MinRead)
	_, err := buf.ReadFrom(lr)
	return buf.Bytes(), err
}

// maxReader is io.LimitReader that fails, with *http.MaxBytesError, on a
// byte beyond its limit. (http.MaxBytesReader needs the ResponseWriter and
// also closes the connection; the server closes it anyway after a 413
// whose body was not read.)
type maxReader struct {
	r io.Reader
	n int64 // bytes left
}

func (m *maxReader) Read(p []byte) (int, error) {
	if int64(len(p)) > m.n+1 {
		p = p[:m.n+1]
	}
	n, err := m.r.Read(p)
	if int64(n) > m.n {
		return int(m.n), &http.MaxBytesError{Limit: MaxBodyBytes}
	}
	m.n -= int64(n)
	return n, err
}

// RewriteBody returns an HTTP body of JSON-RPC messages with every tools/call
// and tools/list request rewritten as the wire layer does (see
// Transport). It walks the body once without decoding it: only the
// requests it rewrites are decoded and encoded again, every other byte is
// kept as sent, and a body with nothing to rewrite is returned as is. A body
// that is not a JSON object or array is returned as is, for the SDK to
// refuse. A batch of more than MaxBatch messages is ErrBatchTooLarge.
func RewriteBody(body []byte) ([]byte, error) {
	spans, err := scanBody(body)
	if err != nil || len(spans) == 0 {
		return body, err
	}
	if len(spans) == 1 && spans[0].start == 0 && spans[0].end == len(body) {
		return rewriteRaw(body), nil // one message, nothing around it
	}
	out := make([]byte, 0, len(body)+len(spans)*64)
	last := 0
	for _, sp := range spans {
		out = append(out, body[last:sp.start]...)
		out = append(out, rewriteRaw(body[sp.start:sp.end])...)
		last = sp.end
	}
	return append(out, body[last:]...), nil
}

type span struct{ start, end int }

// scanBody returns the spans of the messages of body that may be tools/call
// or tools/list requests. It stops at what it cannot walk (the body is then
// not valid JSON, and the SDK refuses it whole).
func scanBody(body []byte) ([]span, error) {
	i := skipSpace(body, 0)
	if i == len(body) {
		return nil, nil
	}
	if body[i] == '{' {
		end, ok := skipValue(body, i)
		if ok && governed(body[i:end]) {
			return []span{{i, end}}, nil
		}
		return nil, nil
	}
	if body[i] != '[' {
		return nil, nil
	}
	var spans []span
	n := 0
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] != ']' {
		if n++; n > MaxBatch {
			return nil, ErrBatchTooLarge
		}
		end, ok := skipValue(body, i)
		if !ok {
			return spans, nil
		}
		if body[i] == '{' && governed(body[i:end]) {
			spans = append(spans, span{i, end})
		}
		i = skipSpace(body, end)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return spans, nil
}

// governed reports whether the JSON object obj has a member whose key is
// "method" and whose value is "tools/call" or "tools/list". It errs on the
// side of yes (any letter case of the key, any member of a duplicated
// key): rewriteRaw then decodes the message as the SDK does and decides.
func governed(obj []byte) bool {
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		kend, ok := skipString(obj, i)
		if !ok {
			return false
		}
		key := obj[i:kend]
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = skipSpace(obj, i+1)
		vend, ok := skipValue(obj, i)
		if !ok {
			return false
		}
		if i < len(obj) && obj[i] == '"' && isKey(key, "method") &&
			(isKey(obj[i:vend], "tools/call") || isKey(obj[i:vend], "tools/list")) {
			return true
		}
		i = skipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return false
}

// isKey reports whether the JSON string quoted equals want up to letter
// case, decoding escapes only when there are any.
func isKey(quoted []byte, want string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return strings.EqualFold(string(quoted[1:len(quoted)-1]), want)
	}
	var s string
	return json.Unmarshal(quoted, &s) == nil && strings.EqualFold(s, want)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the JSON string starting at b[i].
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index after the JSON value starting at b[i]; it
// matches brackets and skips strings, and validates nothing else.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				return j, j > i
			}
			j++
		}
		return j, j > i
	}
}

func rewriteRaw(raw []byte) []byte {
	if out, ok := rewriteRawFast(raw); ok {
		return out
	}
	return rewriteRawFull(raw)
}

// rewriteRawFull is rewriteRaw for any message: it decodes the message and
// encodes it again.
func rewriteRawFull(raw []byte) []byte {
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
