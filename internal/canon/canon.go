// Package canon hashes a call's arguments the same way everywhere, so the
// ledger's argument check, the audit trail's arguments_sha256 and the
// decision log's argument hashes agree.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/jsonx"
)

// JSON returns the canonical form of a JSON value: decoded with numbers kept
// as their text (json.Number), re-encoded compactly with object keys sorted
// and without HTML escaping. Two values equal up to key order and
// insignificant whitespace have the same canonical form; numbers are compared
// by their text (1 and 1.0 differ). Input that is not valid JSON is returned
// as is, and so is input already in canonical form (without a copy: what
// arguments usually are).
func JSON(raw []byte) []byte {
	if canonical(raw) {
		return raw
	}
	return reencode(raw)
}

// reencode is JSON the long way: decode, encode.
func reencode(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	out, err := jsonx.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// SHA256 is the hex SHA-256 of JSON(raw).
func SHA256(raw []byte) string {
	sum := sha256.Sum256(JSON(raw))
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// maxCanonicalDepth bounds the nesting canonical reads; deeper values take
// the long way.
const maxCanonicalDepth = 64

// canonical reports whether raw is one JSON value that reencode would give
// back byte for byte: no whitespace, object keys in strictly increasing
// byte order (no duplicates), strings of printable ASCII without escapes
// (the encoder would rewrite an escape, and decides itself what to
// escape), numbers as JSON spells them (kept as their text), nothing
// after the value. FuzzCanonical checks it against reencode.
func canonical(raw []byte) bool {
	end, ok := canonicalValue(raw, 0, 0)
	return ok && end == len(raw)
}

// canonicalValue reads the canonical value at raw[i:] and returns where it
// ends.
func canonicalValue(raw []byte, i, depth int) (int, bool) {
	if i >= len(raw) || depth > maxCanonicalDepth {
		return 0, false
	}
	switch c := raw[i]; {
	case c == '{':
		i++
		if i < len(raw) && raw[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		for first := true; ; first = false {
			start := i
			end, ok := canonicalString(raw, i)
			if !ok || !first && bytes.Compare(raw[start+1:end-1], prev) <= 0 {
				return 0, false
			}
			prev = raw[start+1 : end-1]
			if end >= len(raw) || raw[end] != ':' {
				return 0, false
			}
			if i, ok = canonicalValue(raw, end+1, depth+1); !ok || i >= len(raw) {
				return 0, false
			}
			switch raw[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '[':
		i++
		if i < len(raw) && raw[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonicalValue(raw, i, depth+1); !ok || i >= len(raw) {
				return 0, false
			}
			switch raw[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '"':
		return canonicalString(raw, i)
	case c == 't':
		return jsonx.ScanLiteral(raw, i, "true")
	case c == 'f':
		return jsonx.ScanLiteral(raw, i, "false")
	case c == 'n':
		return jsonx.ScanLiteral(raw, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return jsonx.ScanNumber(raw, i)
	}
	return 0, false
}

// canonicalString reads a string of printable ASCII without escapes.
func canonicalString(raw []byte, i int) (int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, false
	}
	for i++; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return 0, false
		}
	}
	return 0, false
}
