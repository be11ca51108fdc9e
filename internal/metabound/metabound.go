// Package metabound bounds a client's _meta object (docs/contract.md §3, "Bounding
// _meta") in one pass over its JSON: engine.BoundMeta is its public face.
package metabound

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The bounds; engine publishes them as MaxMetaEntries, MaxMetaDepth and
// MaxMetaValueLen.
const (
	// MaxEntries is the number of entries kept: the first ones, in wire
	// order, that pass the other bounds.
	MaxEntries = 32
	// MaxDepth is the deepest level a value may reach. An entry's own value
	// is level 1; every value inside an object or array is one level deeper.
	MaxDepth = 4
	// MaxValueLen is the longest an entry's value may be, counted in bytes
	// of its compact JSON encoding as sent.
	MaxValueLen = 4096
)

// Bound returns the entries of raw that docs/contract.md §3 keeps, in wire order, each
// made by entry from its decoded key and its compact value as sent (the
// values share one array: they must not be modified). It returns nil for
// anything that is not a valid JSON object of valid UTF-8, and when no
// entry is kept. See engine.BoundMeta for the rules.
//
// The work is linear in len(raw) and allocates only what is kept; raw is
// not retained.
func Bound[E any](raw []byte, entry func(key string, value json.RawMessage) E) []E {
	// Validate the whole input once, then walk it knowing it is valid JSON.
	// Decoding entry by entry with json.Decoder would cost a dozen
	// allocations per entry (it builds an error to find each value's end).
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return nil
	}
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return nil
	}

	var (
		kept    [MaxEntries]span
		count   int
		total   int
		keyBuf  [512]byte
		keys    = keyBuf[:0]        // decoded keys of the kept entries, back to back
		dropped map[string]struct{} // keys whose first occurrence was dropped; rare
	)
	for i = skipSpace(raw, i+1); raw[i] != '}' && count < MaxEntries; {
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
		kept[count] = span{k0, len(keys), v0, v1, n}
		count++
		total += n
	}
	if count == 0 {
		return nil
	}

	// One string for the keys and one array for the values.
	ks := string(keys)
	values := make([]byte, 0, total)
	entries := make([]E, count)
	for j, sp := range kept[:count] {
		start := len(values)
		values = appendCompact(values, raw[sp.v0:sp.v1])
		entries[j] = entry(ks[sp.k0:sp.k1], values[start:len(values):len(values)])
	}
	return entries
}

// span is a kept entry while Bound walks: its key in the decoded
// keys, its value in the input, and the value's compact length.
type span struct{ k0, k1, v0, v1, n int }

func seen(keys []byte, kept []span, dropped map[string]struct{}, key []byte) bool {
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
// is within MaxDepth and MaxValueLen and holds only numbers OPA can
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
			if open > MaxDepth {
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
			if open+1 > MaxDepth {
				return 0, false
			}
			j := stringEnd(v, i)
			n += j - i
			i = j - 1
		default: // a number or a literal
			if open+1 > MaxDepth {
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
		if n > MaxValueLen {
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
