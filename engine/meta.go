package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// Bounds on a client's _meta (SPEC §3, "Bounding _meta").
const (
	// MaxMetaEntries is the number of entries kept: the first ones, in wire
	// order, that pass the other bounds.
	MaxMetaEntries = 32
	// MaxMetaDepth is the deepest level a value may reach. An entry's own value
	// is level 1; every value inside an object or array is one level deeper.
	MaxMetaDepth = 4
	// MaxMetaValueLen is the longest an entry's value may be, counted in bytes
	// of its compact JSON encoding as sent (insignificant whitespace removed,
	// escapes as the client wrote them: "\u00e9" counts 6, "é" counts 2).
	MaxMetaValueLen = 4096
)

// Meta is a bounded _meta object: at most MaxMetaEntries entries in wire
// order, each value the exact JSON the client sent, compacted.
//
// The zero Meta is empty. A Meta is immutable after BoundMeta and safe for
// concurrent use; slices it returns are shared with it and must not be
// modified.
type Meta struct {
	entries []MetaEntry
}

// MetaEntry is one kept entry of a Meta.
type MetaEntry struct {
	Key string
	// Value is the compact JSON encoding of the value as sent: numbers keep
	// their exact text and strings their escapes.
	Value json.RawMessage
}

// BoundMeta applies SPEC §3 to a raw _meta. It never fails:
//
//   - anything that is not a JSON object becomes empty: null, arrays, scalars,
//     empty input, invalid JSON anywhere (also trailing data after the object,
//     and nesting deeper than encoding/json reads, 10000), and input that is
//     not valid UTF-8 (RFC 8259 §8.1);
//   - an entry whose value nests deeper than MaxMetaDepth is dropped;
//   - an entry whose compact value is longer than MaxMetaValueLen bytes is dropped;
//   - an entry holding a number that OPA cannot represent (a binary exponent
//     beyond ±100000, such as 1e99999; ast.NumberChecked) is dropped, since it
//     cannot be kept exactly as sent;
//   - a key that occurs again is ignored: its first occurrence decides, whether
//     or not that one was kept;
//   - the first MaxMetaEntries entries that pass are kept, in wire order.
//
// The work is linear in len(raw) and allocates only what is kept; raw is not
// retained.
func BoundMeta(raw json.RawMessage) Meta {
	// Validate the whole input once, then walk it knowing it is valid JSON.
	// Decoding entry by entry with json.Decoder would cost a dozen
	// allocations per entry (it builds an error to find each value's end).
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return Meta{}
	}
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return Meta{}
	}

	var (
		kept    [MaxMetaEntries]metaSpan
		count   int
		total   int
		keyBuf  [512]byte
		keys    = keyBuf[:0]        // decoded keys of the kept entries, back to back
		dropped map[string]struct{} // keys whose first occurrence was dropped; rare
	)
	for i = skipSpace(raw, i+1); raw[i] != '}' && count < MaxMetaEntries; {
		k1 := stringEnd(raw, i)
		keyRaw := raw[i:k1]
		v0 := skipSpace(raw, skipSpace(raw, k1)+1) // past the ':'
		v1 := valueEnd(raw, v0)
		if i = skipSpace(raw, v1); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}

		k0 := len(keys)
		keys = appendKey(keys, keyRaw)
		key := keys[k0:]
		if seen(keys, kept[:count], dropped, key) {
			keys = keys[:k0]
			continue
		}
		n, ok := measure(raw[v0:v1])
		if !ok {
			if dropped == nil {
				dropped = make(map[string]struct{})
			}
			dropped[string(key)] = struct{}{}
			keys = keys[:k0]
			continue
		}
		kept[count] = metaSpan{k0, len(keys), v0, v1, n}
		count++
		total += n
	}
	if count == 0 {
		return Meta{}
	}

	// One string for the keys and one array for the values.
	ks := string(keys)
	values := make([]byte, 0, total)
	entries := make([]MetaEntry, count)
	for j, sp := range kept[:count] {
		start := len(values)
		values = appendCompact(values, raw[sp.v0:sp.v1])
		entries[j] = MetaEntry{Key: ks[sp.k0:sp.k1], Value: values[start:len(values):len(values)]}
	}
	return Meta{entries: entries}
}

// metaSpan is a kept entry while BoundMeta walks: its key in the decoded
// keys, its value in the input, and the value's compact length.
type metaSpan struct{ k0, k1, v0, v1, n int }

func seen(keys []byte, kept []metaSpan, dropped map[string]struct{}, key []byte) bool {
	for _, sp := range kept {
		if string(keys[sp.k0:sp.k1]) == string(key) {
			return true
		}
	}
	_, ok := dropped[string(key)]
	return ok
}

// appendKey appends the decoded form of q, a valid JSON string.
func appendKey(dst, q []byte) []byte {
	if bytes.IndexByte(q, '\\') < 0 {
		return append(dst, q[1:len(q)-1]...)
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return append(dst, q[1:len(q)-1]...) // unreachable: q is valid JSON
	}
	return append(dst, s...)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the index after the valid JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		open := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				open++
			case '}', ']':
				if open--; open == 0 {
					return i + 1
				}
			}
			i++
		}
	default:
		for i < len(b) && !isDelim(b[i]) {
			i++
		}
		return i
	}
}

func isDelim(c byte) bool {
	return isSpace(c) || c == ',' || c == '}' || c == ']'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// measure reports the compact length of v, a valid JSON value, and whether v
// is within MaxMetaDepth and MaxMetaValueLen and holds only numbers OPA can
// represent. It stops as soon as a bound is passed, so a megabyte value costs
// at most one pass.
func measure(v []byte) (int, bool) {
	n, open := 0, 0 // compact length so far; containers open around i
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			// The container itself sits at level open+1.
			open++
			if open > MaxMetaDepth {
				return 0, false
			}
			n++
		case '}', ']':
			open--
			n++
		case ',', ':':
			n++
		case '"':
			// A string value sits at level open+1; so does the value of a
			// key, which is checked here too.
			if open+1 > MaxMetaDepth {
				return 0, false
			}
			j := stringEnd(v, i)
			n += j - i
			i = j - 1
		default: // a number or a literal
			if open+1 > MaxMetaDepth {
				return 0, false
			}
			j, exp := i, false
			for j < len(v) && !isDelim(v[j]) {
				exp = exp || v[j]|0x20 == 'e'
				j++
			}
			if exp && (c == '-' || c >= '0' && c <= '9') {
				if _, err := ast.NumberChecked(string(v[i:j])); err != nil {
					return 0, false
				}
			}
			n += j - i
			i = j - 1
		}
		if n > MaxMetaValueLen {
			return 0, false
		}
	}
	return n, true
}

// appendCompact appends v, a valid JSON value, without its insignificant
// whitespace; like json.Compact, it changes nothing else.
func appendCompact(dst, v []byte) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if isSpace(c) {
			continue
		}
		if c != '"' {
			dst = append(dst, c)
			continue
		}
		j := stringEnd(v, i)
		dst = append(dst, v[i:j]...)
		i = j - 1
	}
	return dst
}

// Len returns the number of entries.
func (m Meta) Len() int { return len(m.entries) }

// Entries returns the entries in wire order. The slice and the values are
// shared with m: read them, do not modify them.
func (m Meta) Entries() []MetaEntry { return m.entries }

// Get returns the compact JSON value of key. The value is shared with m and
// must not be modified.
func (m Meta) Get(key string) (json.RawMessage, bool) {
	for _, e := range m.entries {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// String returns the value of key if it is a JSON string, unescaped.
func (m Meta) String(key string) (string, bool) {
	v, ok := m.Get(key)
	if !ok || v[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false // unreachable: values are valid JSON
	}
	return s, true
}

// MarshalJSON returns m as a JSON object in wire order, with each value
// exactly as kept. Keys are re-encoded from their decoded form.
func (m Meta) MarshalJSON() ([]byte, error) {
	size := 2
	for _, e := range m.entries {
		size += len(e.Key) + 4 + len(e.Value)
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, e := range m.entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e.Key)
		b = append(b, ':')
		b = append(b, e.Value...)
	}
	return append(b, '}'), nil
}

// appendString appends s, valid UTF-8, as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// ASTValue returns m as an OPA object for the input document. Numbers keep
// their exact text (ast.Number is a string); nothing goes through float64.
// Within a value, a key sent twice takes its last value and a lone surrogate
// escape reads as U+FFFD, as encoding/json (and so Map, String and every Go
// hook) and OPA's own input decoding do: the policy reads what the hooks
// read. Each call builds a new value.
//
// It fails, rather than leave an entry out, when a value cannot be converted;
// BoundMeta keeps only values OPA can represent, so that is not expected.
func (m Meta) ASTValue() (ast.Value, error) {
	obj := ast.NewObjectWithCapacity(len(m.entries))
	for _, e := range m.entries {
		v, err := ast.ValueFromReader(bytes.NewReader(e.Value))
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", e.Key, err)
		}
		obj.Insert(ast.StringTerm(e.Key), ast.NewTerm(v))
	}
	return obj, nil
}

// Map returns m decoded for Go hooks: numbers are json.Number, objects
// map[string]any, arrays []any. Each call builds a new map the caller owns.
func (m Meta) Map() map[string]any {
	out := make(map[string]any, len(m.entries))
	for _, e := range m.entries {
		var v any
		if err := util.UnmarshalJSON(e.Value, &v); err != nil {
			continue // unreachable: values are valid JSON
		}
		out[e.Key] = v
	}
	return out
}

var _ json.Marshaler = Meta{}
