package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/internal/metabound"
)

// Bounds on a client's _meta (docs/contract.md §3, "Bounding _meta").
const (
	// MaxMetaEntries is the number of entries kept: the first ones, in wire
	// order, that pass the other bounds.
	MaxMetaEntries = metabound.MaxEntries
	// MaxMetaDepth is the deepest level a value may reach. An entry's own value
	// is level 1; every value inside an object or array is one level deeper.
	MaxMetaDepth = metabound.MaxDepth
	// MaxMetaValueLen is the longest an entry's value may be, counted in bytes
	// of its compact JSON encoding as sent (insignificant whitespace removed,
	// escapes as the client wrote them: "\u00e9" counts 6, "é" counts 2).
	MaxMetaValueLen = metabound.MaxValueLen
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

// BoundMeta applies docs/contract.md §3 to a raw _meta. It never fails:
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
	entries := metabound.Bound(raw, func(k string, v json.RawMessage) MetaEntry { return MetaEntry{Key: k, Value: v} })
	if entries == nil {
		return Meta{}
	}
	return Meta{entries: entries}
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

// astValue returns m as an OPA object for the input document. Numbers keep
// their exact text (ast.Number is a string); nothing goes through float64.
// Within a value, a key sent twice takes its last value and a lone surrogate
// escape reads as U+FFFD, as encoding/json (and so Map, String and every Go
// hook) and OPA's own input decoding do: the policy reads what the hooks
// read. Each call builds a new value.
//
// It fails, rather than leave an entry out, when a value cannot be converted;
// BoundMeta keeps only values OPA can represent, so that is not expected.
func (m Meta) astValue() (ast.Value, error) {
	obj := ast.NewObjectWithCapacity(len(m.entries))
	for _, e := range m.entries {
		v, err := metaValue(e.Value)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", e.Key, err)
		}
		obj.Insert(ast.StringTerm(e.Key), ast.NewTerm(v))
	}
	return obj, nil
}

// metaValue converts one kept value. exactjson reads the bytes in one pass
// and gives what OPA's decoder gives wherever it accepts them; it refuses
// a key sent twice and a lone surrogate, which OPA's reading (the last
// value, U+FFFD) decides instead.
func metaValue(raw json.RawMessage) (ast.Value, error) {
	if v, err := exactjson.Value(raw); err == nil {
		return v, nil
	}
	return ast.ValueFromReader(bytes.NewReader(raw))
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
