package exactjson

import "github.com/toolgate/toolgate/internal/jsonx"

// valid is json.Valid for the check path: the same answer (RFC 8259's
// grammar, nesting at most maxNesting deep, bytes above 0x7f not checked
// here), read by recursive descent instead of encoding/json's scanner,
// which costs most of a small check.
func valid(b []byte) bool {
	end, ok := validValue(b, skipWS(b, 0), 0)
	return ok && skipWS(b, end) == len(b)
}

// maxNesting is encoding/json's limit on nesting (its scanner's
// maxNestingDepth): deeper input is not valid to json.Valid.
const maxNesting = 10000

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// validValue returns the index after the valid value at b[i], whose
// brackets are depth deep.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '{':
		if depth++; depth > maxNesting {
			return 0, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			end, ok := validString(b, i)
			if !ok {
				return 0, false
			}
			i = skipWS(b, end)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			if i, ok = validValue(b, skipWS(b, i+1), depth); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			switch {
			case i >= len(b):
				return 0, false
			case b[i] == '}':
				return i + 1, true
			case b[i] != ',':
				return 0, false
			}
			i = skipWS(b, i+1)
		}
	case c == '[':
		if depth++; depth > maxNesting {
			return 0, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = validValue(b, i, depth); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			switch {
			case i >= len(b):
				return 0, false
			case b[i] == ']':
				return i + 1, true
			case b[i] != ',':
				return 0, false
			}
			i = skipWS(b, i+1)
		}
	case c == '"':
		return validString(b, i)
	case c == 't':
		return jsonx.ScanLiteral(b, i, "true")
	case c == 'f':
		return jsonx.ScanLiteral(b, i, "false")
	case c == 'n':
		return jsonx.ScanLiteral(b, i, "null")
	default:
		return jsonx.ScanNumber(b, i)
	}
}

func validString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			j++
			if j >= len(b) {
				return 0, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return 0, false
				}
				for _, h := range b[j+1 : j+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
