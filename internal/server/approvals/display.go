package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ArgumentsText is how a person is shown a request's arguments
// (docs/contract.md §13): their JSON text, indented, with every number as
// it was sent (never through floating point) and every character a reader
// could not see, or that reorders the text around it, written as a \u
// escape (VisibleJSON). Nothing is cut. Arguments that are not JSON are
// shown as a Go-quoted string.
func ArgumentsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return Visible(string(raw))
	}
	return string(VisibleJSON(out.Bytes()))
}

// Hidden reports whether r is shown as an escape: controls, format
// characters (bidi overrides and isolates, zero-width characters, soft
// hyphen, tags), spaces other than U+0020, line and paragraph
// separators, private-use, unassigned and noncharacter code points,
// default-ignorable code points (fillers, variation selectors) and the
// replacement character (what invalid UTF-8 decodes to).
func Hidden(r rune) bool {
	if r == ' ' {
		return false
	}
	if r == utf8.RuneError || !unicode.IsPrint(r) {
		return true
	}
	return unicode.In(r, unicode.Bidi_Control, unicode.Join_Control, unicode.Variation_Selector,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Noncharacter_Code_Point, unicode.Cf, unicode.Co)
}

// Visible returns s with every Hidden character written as \uXXXX (two
// escapes, a UTF-16 surrogate pair, above U+FFFF) and every byte that is
// not UTF-8 as \xXX; a backslash is doubled, so the text reads back
// unambiguously.
func Visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case Hidden(r):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// VisibleJSON returns the JSON text data with every Hidden character
// inside its strings written as a \u escape: the same JSON value, which a
// reader sees whole. Text outside strings is copied.
func VisibleJSON(data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case !inString:
			inString = r == '"'
			b.Write(data[i : i+n])
		case escaped:
			escaped = false
			b.Write(data[i : i+n])
		case r == '\\':
			escaped = true
			b.WriteByte('\\')
		case r == '"':
			inString = false
			b.WriteByte('"')
		case Hidden(r):
			writeEscape(&b, r)
		default:
			b.Write(data[i : i+n])
		}
		i += n
	}
	return b.Bytes()
}

type stringWriter interface{ WriteString(string) (int, error) }

func writeEscape(w stringWriter, r rune) {
	if r > 0xFFFF {
		r1, r2 := utf16Surrogates(r)
		_, _ = w.WriteString(fmt.Sprintf(`\u%04x\u%04x`, r1, r2))
		return
	}
	_, _ = w.WriteString(fmt.Sprintf(`\u%04x`, r))
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}
