package toolcall

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Fingerprint is a canonical key of the caller: equal for callers whose
// input documents are equal (subject, roles in order, claims), different
// otherwise. It is what the engine's decision cache keys on.
func (c *Caller) Fingerprint() string {
	var buf [192]byte
	return string(c.AppendFingerprint(buf[:0]))
}

// AppendFingerprint appends c's Fingerprint to b: every part of the caller
// the input document shows (subject, roles, claims), so that two callers
// with one fingerprint get one input document. Roles are kept in the order
// given, duplicates included: a policy may read input.caller.roles[0] or
// count them. Strings are length-prefixed, claims are encoded with their Go
// types and object keys sorted.
func (c *Caller) AppendFingerprint(b []byte) []byte {
	b = appendLenString(b, c.Subject)
	b = strconv.AppendInt(b, int64(len(c.Roles)), 10)
	b = append(b, ':')
	for _, r := range c.Roles {
		b = appendLenString(b, r)
	}
	if len(c.Claims) == 0 { // nil and {} both become {} in the input
		return append(b, '{', '}')
	}
	return appendCanonical(b, c.Claims)
}

func appendLenString(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// appendCanonical encodes a claims value so that equal encodings mean equal
// values of equal Go types (a float64 1 and an int 1 stay apart, since the
// input document may spell them differently).
func appendCanonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if v {
			return append(b, 't')
		}
		return append(b, 'f')
	case string:
		return appendLenString(append(b, 's'), v)
	case json.Number:
		return appendLenString(append(b, 'N'), string(v))
	case float64:
		return append(strconv.AppendUint(append(b, 'F'), math.Float64bits(v), 16), ';')
	case float32:
		return append(strconv.AppendUint(append(b, 'f'), uint64(math.Float32bits(v)), 16), ';')
	case int:
		return append(strconv.AppendInt(append(b, 'i'), int64(v), 10), ';')
	case int64:
		return append(strconv.AppendInt(append(b, 'I'), v, 10), ';')
	case int32:
		return append(strconv.AppendInt(append(b, 'j'), int64(v), 10), ';')
	case uint64:
		return append(strconv.AppendUint(append(b, 'U'), v, 10), ';')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(strconv.AppendInt(append(b, '{'), int64(len(v)), 10), ':')
		for _, k := range keys {
			b = appendCanonical(appendLenString(b, k), v[k])
		}
		return append(b, '}')
	case []any:
		b = append(strconv.AppendInt(append(b, '['), int64(len(v)), 10), ':')
		for _, x := range v {
			b = appendCanonical(b, x)
		}
		return append(b, ']')
	case []string:
		b = append(strconv.AppendInt(append(b, 'S'), int64(len(v)), 10), ':')
		for _, x := range v {
			b = appendLenString(b, x)
		}
		return b
	}
	// Anything else: its type and its JSON. Two values of one type with one
	// encoding convert to one input value.
	j, err := json.Marshal(v)
	if err != nil {
		j = fmt.Appendf(nil, "%#v", v)
	}
	return appendLenString(appendLenString(append(b, '?'), fmt.Sprintf("%T", v)), string(j))
}
