package toolcall

import (
	"bytes"
	"encoding/json"
)

// Meta is a bounded _meta object: at most engine.MaxMetaEntries entries
// in wire order, each value the exact JSON the client sent, compacted.
//
// The zero Meta is empty. A Meta is immutable once made (engine.BoundMeta,
// MetaOf) and safe for concurrent use; slices it returns are shared with
// it and must not be modified.
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

// MetaOf is the Meta of entries, in order, as engine.BoundMeta keeps them:
// it does not bound them. entries are kept, not copied.
func MetaOf(entries []MetaEntry) Meta { return Meta{entries: entries} }

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

// Map returns m decoded for Go hooks: numbers are json.Number, objects
// map[string]any, arrays []any. Each call builds a new map the caller owns.
func (m Meta) Map() map[string]any {
	out := make(map[string]any, len(m.entries))
	for _, e := range m.entries {
		var v any
		dec := json.NewDecoder(bytes.NewReader(e.Value))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			continue // unreachable: values are valid JSON
		}
		out[e.Key] = v
	}
	return out
}

var _ json.Marshaler = Meta{}
