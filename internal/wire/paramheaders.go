package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// The 2026-07-28 revision's HTTP transport mirrors a tools/call argument
// whose inputSchema property carries an x-mcp-header annotation in an
// Mcp-Param-<Name> header, and the server rejects a request whose header
// is missing, does not match the argument, or is not valid Base64 where it
// says it is: HTTP 400 with a HeaderMismatch (-32020) JSON-RPC error. The
// go-sdk checks this only for tools registered with it; a gateway answers
// tools/call itself, so ParamHeaderGate checks it against the tool as the
// caller sees it listed, with the SDK's answers.

const (
	paramVersion       = "2026-07-28"
	paramPrefix        = "Mcp-Param-"
	codeHeaderMismatch = -32020
	b64Prefix          = "=?base64?"
	b64Suffix          = "?="
	maxSafeInt         = 1<<53 - 1
)

// ToolSchema returns the inputSchema of the tool named name as r's caller
// sees it listed; false when there is no such tool.
type ToolSchema func(r *http.Request, name string) (json.RawMessage, bool)

// ParamHeaderGate answers a 2026-07-28 tools/call whose Mcp-Param headers
// disagree with its arguments with HTTP 400 and a -32020 error, before h.
// It reads only POSTs whose Mcp-Method header is tools/call; it must run
// inside Handler (which bounds the body).
func ParamHeaderGate(h http.Handler, schema ToolSchema) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("Mcp-Protocol-Version")
		if r.Method != http.MethodPost || v == "" || v < paramVersion ||
			strings.TrimSpace(r.Header.Get("Mcp-Method")) != "tools/call" || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			h.ServeHTTP(w, r)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" || len(msg.ID) == 0 {
			h.ServeHTTP(w, r) // the SDK answers what is malformed
			return
		}
		s, ok := schema(r, msg.Params.Name)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		if err := CheckParamHeaders(r.Header, s, msg.Params.Arguments); err != nil {
			resp, _ := json.Marshal(map[string]any{
				"jsonrpc": "2.0",
				"id":      msg.ID,
				"error":   map[string]any{"code": codeHeaderMismatch, "message": err.Error()},
			})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(resp)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type headerProp struct {
	XMCPHeader json.RawMessage       `json:"x-mcp-header,omitempty"`
	Properties map[string]headerProp `json:"properties,omitempty"`
}

type headerBinding struct {
	path   []string
	header string
}

func collectBindings(props map[string]headerProp, prefix []string, out []headerBinding) []headerBinding {
	for name, p := range props {
		path := append(append([]string(nil), prefix...), name)
		var h string
		if json.Unmarshal(p.XMCPHeader, &h) == nil && h != "" {
			out = append(out, headerBinding{path: path, header: h})
		}
		if len(p.Properties) > 0 {
			out = collectBindings(p.Properties, path, out)
		}
	}
	return out
}

// CheckParamHeaders reports whether header carries, for every property of
// inputSchema annotated with x-mcp-header, the Mcp-Param header that
// matches args (the go-sdk server's rule): nil when it does, else an error
// whose text names the header, never a value of args.
func CheckParamHeaders(header http.Header, inputSchema, args json.RawMessage) error {
	var s headerProp
	if json.Unmarshal(inputSchema, &s) != nil {
		return nil
	}
	bindings := collectBindings(s.Properties, nil, nil)
	if len(bindings) == 0 {
		return nil
	}
	var argMap map[string]json.RawMessage
	_ = json.Unmarshal(args, &argMap)
	for _, b := range bindings {
		full := paramPrefix + b.header
		hv := strings.TrimSpace(header.Get(full))
		raw, found := lookupArg(argMap, b.path)
		path := strings.Join(b.path, ".")
		if !found || string(raw) == "null" {
			if hv != "" {
				return fmt.Errorf("header mismatch: unexpected %s header for absent or null parameter %q", full, path)
			}
			continue
		}
		if hv == "" {
			return fmt.Errorf("header mismatch: missing %s header for parameter %q", full, path)
		}
		decoded, ok := decodeParamHeader(hv)
		if !ok {
			return fmt.Errorf("header mismatch: %s header contains invalid Base64 encoding", full)
		}
		bodyVal, ok := primitive(raw)
		if !ok {
			return fmt.Errorf("header mismatch: %s header present but body parameter %q is not a primitive type", full, path)
		}
		if !primitiveMatches(decoded, bodyVal) {
			return fmt.Errorf("header mismatch: %s header value does not match body value", full)
		}
	}
	return nil
}

func lookupArg(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	if !ok {
		return nil, false
	}
	for _, part := range path[1:] {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// primitive is a string, bool or safe integer argument value.
func primitive(raw json.RawMessage) (any, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case string, bool:
		return v, true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < -maxSafeInt || v > maxSafeInt {
			return nil, false
		}
		return int64(v), true
	}
	return nil, false
}

func primitiveMatches(h string, body any) bool {
	switch b := body.(type) {
	case int64:
		n, err := strconv.ParseFloat(h, 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n != math.Trunc(n) || n < -maxSafeInt || n > maxSafeInt {
			return false
		}
		return int64(n) == b
	case bool:
		return h == strconv.FormatBool(b)
	case string:
		return h == b
	}
	return false
}

func decodeParamHeader(v string) (string, bool) {
	if enc, ok := strings.CutPrefix(v, b64Prefix); ok {
		if enc, ok = strings.CutSuffix(enc, b64Suffix); ok {
			d, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				return "", false
			}
			return string(d), true
		}
	}
	return v, true
}

// ParamHeaders returns the Mcp-Param headers a 2026-07-28 client sends
// with a tools/call of a tool with inputSchema and args (the go-sdk
// client's rule): one per x-mcp-header annotated property whose argument
// is a string, boolean or safe integer, Base64-wrapped when it is not
// plain printable ASCII.
func ParamHeaders(inputSchema, args json.RawMessage) map[string]string {
	var s headerProp
	if json.Unmarshal(inputSchema, &s) != nil {
		return nil
	}
	bindings := collectBindings(s.Properties, nil, nil)
	if len(bindings) == 0 {
		return nil
	}
	var argMap map[string]json.RawMessage
	if json.Unmarshal(args, &argMap) != nil || argMap == nil {
		return nil
	}
	out := map[string]string{}
	for _, b := range bindings {
		raw, ok := lookupArg(argMap, b.path)
		if !ok || string(raw) == "null" {
			continue
		}
		v, ok := primitive(raw)
		if !ok {
			continue
		}
		var str string
		switch v := v.(type) {
		case string:
			str = v
		case bool:
			str = strconv.FormatBool(v)
		case int64:
			str = strconv.FormatInt(v, 10)
		}
		if needsBase64(str) {
			str = b64Prefix + base64.StdEncoding.EncodeToString([]byte(str)) + b64Suffix
		}
		out[paramPrefix+b.header] = str
	}
	return out
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7E {
			return true
		}
	}
	return strings.HasPrefix(s, b64Prefix) && strings.HasSuffix(s, b64Suffix)
}
