package wire

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jsonx"
)

// The fast path below produces, for the params every client sends (an
// object of name, arguments and _meta, a plain string name, keys in their
// exact spelling, each once), the same params as rewriteParamsFull does
// (same entries, same values up to whitespace and key order, which the SDK's
// decoding does not see) without decoding the params into maps and encoding
// them again: it walks them once and splices the raw values. Anything else
// (an integer name, an escape in a key or the name, a field of another
// spelling, a duplicate) takes the full path. fast_internal_test.go checks
// the two agree.

// fastKeys are the params entries the fast path keeps as sent, per method.
var fastKeys = map[string][]string{
	"tools/call": {"name", "arguments", "_meta"},
	"tools/list": {"_meta"},
}

// rewriteParamsFast is rewriteParamsFull for the common shape; ok is false
// when params are not of it.
func rewriteParamsFast(method string, params json.RawMessage) (out json.RawMessage, ok bool) {
	if !json.Valid(params) {
		return nil, false
	}
	return rewriteValidParamsFast(method, params)
}

// rewriteValidParamsFast is rewriteParamsFast for params known to be valid
// JSON (a member of a message that is).
func rewriteValidParamsFast(method string, params json.RawMessage) (out json.RawMessage, ok bool) {
	allowed := fastKeys[method]
	i := skipSpace(params, 0)
	if i >= len(params) || params[i] != '{' {
		return nil, false
	}
	var name, args, meta []byte
	i = skipSpace(params, i+1)
	for i < len(params) && params[i] == '"' {
		kend, ok := skipString(params, i)
		if !ok {
			return nil, false
		}
		key := params[i+1 : kend-1]
		i = skipSpace(params, kend)
		if i >= len(params) || params[i] != ':' {
			return nil, false
		}
		i = skipSpace(params, i+1)
		vend, ok := skipValue(params, i)
		if !ok {
			return nil, false
		}
		v := params[i:vend]
		var slot *[]byte
		switch {
		case !slices.Contains(allowed, string(key)):
			return nil, false
		case string(key) == "name":
			slot = &name
		case string(key) == "arguments":
			slot = &args
		default:
			slot = &meta
		}
		if *slot != nil {
			return nil, false // a duplicate: the full path keeps the last
		}
		*slot = v
		i = skipSpace(params, vend)
		if i < len(params) && params[i] == ',' {
			i = skipSpace(params, i+1)
		}
	}
	if method == "tools/call" && !plainString(name) || !utf8.Valid(meta) {
		return nil, false
	}
	// The wire entry is Info{Meta: meta} encoded (appendInfo); the meta
	// grows by its escapes, a few per key.
	buf := make([]byte, 0, len(params)+2*len(meta)+len(Key)+64)
	buf = append(buf, '{')
	if name != nil {
		buf = append(buf, `"name":`...)
		buf = append(buf, name...)
		buf = append(buf, ',')
	}
	if args != nil {
		buf = append(buf, `"arguments":`...)
		buf = append(buf, args...)
		buf = append(buf, ',')
	}
	buf = append(buf, `"_meta":{`...)
	if meta != nil && meta[0] == '{' {
		var ok bool
		if buf, ok = appendProtocolEntries(buf, meta); !ok {
			return nil, false
		}
	}
	buf = append(buf, `"`+Key+`":`...)
	buf = appendInfo(buf, meta)
	return append(buf, '}', '}'), true
}

// appendInfo appends Info{Meta: string(meta)} as jsonx.Marshal encodes it,
// byte for byte, without reflection or a string copy of meta.
func appendInfo(buf, meta []byte) []byte {
	buf = append(buf, `{"meta":"`...)
	const hex = "0123456789abcdef"
	for i := 0; i < len(meta); {
		c := meta[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c == '\b':
				buf = append(buf, '\\', 'b')
			case c == '\f':
				buf = append(buf, '\\', 'f')
			case c < 0x20:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(meta[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			buf = append(buf, meta[i:i+size]...)
		}
		i += size
	}
	return append(buf, `"}`...)
}

// plainString reports whether v is a JSON string without escapes or
// control characters: its decoding is its bytes.
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c == '"' || c < 0x20 {
			return false
		}
	}
	return true
}

// appendProtocolEntries appends the entries of the valid JSON object obj
// that the SDK reads (protocolEntries), each followed by a comma; ok is
// false for a key with an escape (the full path decides). Without a
// protocol key, the common case, it only walks the keys.
func appendProtocolEntries(buf, obj []byte) ([]byte, bool) {
	found := false
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		kend, ok := skipString(obj, i)
		if !ok {
			return buf, false
		}
		key := obj[i:kend]
		if bytes.IndexByte(key, '\\') >= 0 {
			return buf, false
		}
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return buf, false
		}
		i = skipSpace(obj, i+1)
		vend, ok := skipValue(obj, i)
		if !ok {
			return buf, false
		}
		found = found || isProtocolKeyBytes(key[1:len(key)-1])
		i = skipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	if !found {
		return buf, true
	}
	for _, e := range protocolEntries(obj) {
		k, err := jsonx.Marshal(e.key)
		if err != nil {
			return buf, false
		}
		buf = append(buf, k...)
		buf = append(buf, ':')
		buf = append(buf, e.value...)
		buf = append(buf, ',')
	}
	return buf, true
}

// isProtocolKeyBytes is isProtocolKey for a key's bytes, without making a
// string of them (the protocol's keys are longer than the 32 bytes a
// conversion may keep off the heap).
func isProtocolKeyBytes(k []byte) bool {
	const prefix = "io.modelcontextprotocol/"
	return len(k) > len(prefix) && string(k[:len(prefix)]) == prefix || string(k) == progressTokenKey
}

// rewriteRawFast is rewriteRaw for a request of the common shape (the
// members jsonrpc "2.0", an id that is a plain string or digits, method
// and params, each once, exactly so spelled): it splices the rewritten
// params into the message as sent instead of decoding and encoding the
// whole message. ok is false for any other message.
func rewriteRawFast(raw []byte) (out []byte, ok bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	var method string
	pstart, pend := -1, -1
	var seen [4]bool
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		kend, ok := skipString(raw, i)
		if !ok {
			return nil, false
		}
		key := string(raw[i+1 : kend-1])
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		vend, ok := skipValue(raw, i)
		if !ok {
			return nil, false
		}
		v := raw[i:vend]
		var n int
		switch key {
		case "jsonrpc":
			n, ok = 0, string(v) == `"2.0"`
		case "id":
			n, ok = 1, plainString(v) || digits(v)
		case "method":
			n, ok = 2, plainString(v)
			method = string(v[1 : len(v)-1])
		case "params":
			n, ok = 3, v[0] == '{'
			pstart, pend = i, vend
		default:
			return nil, false
		}
		if !ok || seen[n] {
			return nil, false
		}
		seen[n] = true
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if !seen[0] || pstart < 0 || (method != "tools/call" && method != "tools/list") {
		return nil, false
	}
	params, ok := rewriteValidParamsFast(method, raw[pstart:pend])
	if !ok {
		params = rewriteParamsFull(method, raw[pstart:pend])
	}
	out = make([]byte, 0, len(raw)-(pend-pstart)+len(params))
	out = append(out, raw[:pstart]...)
	out = append(out, params...)
	return append(out, raw[pend:]...), true
}

// digits reports whether v is a short JSON integer without sign, fraction
// or exponent (an id the SDK reads as the same integer).
func digits(v []byte) bool {
	if len(v) == 0 || len(v) > 15 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
