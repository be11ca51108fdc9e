package exactjson

import (
	"bytes"
	"unicode/utf8"
)

// Check reports what Value would, without building the value: nil where
// Value converts raw, else the *Error Value returns. It reads raw the same
// way, in the same order, so the first problem found is the same one. It
// allocates nothing for JSON whose objects have at most smallObject keys
// without escapes (the arguments of almost every call); it is for a path
// that must refuse what cannot be represented exactly but has no use for
// the value (a memoised decision).
func Check(raw []byte) error {
	if !valid(raw) {
		return &Error{Reason: ReasonSyntax, Offset: 0}
	}
	if !utf8.Valid(raw) {
		return &Error{Reason: ReasonUTF8, Offset: invalidUTF8At(raw)}
	}
	p := parser{b: raw}
	return p.check(p.space(0))
}

// smallObject is how many keys an object may have before check remembers
// them in a map instead of comparing each with those before it.
const smallObject = 16

// check walks the value at i as value reads it; p.end is set past it.
func (p *parser) check(i int) error {
	switch c := p.b[i]; {
	case c == '{':
		return p.checkObject(i)
	case c == '[':
		return p.checkArray(i)
	case c == '"':
		_, err := p.scanStr(i)
		return err
	case c == 't', c == 'n':
		p.end = i + 4
		return nil
	case c == 'f':
		p.end = i + 5
		return nil
	default:
		j := i
		for j < len(p.b) && isNumByte(p.b[j]) {
			j++
		}
		p.end = j
		if noExponent(p.b[i:j]) {
			return nil
		}
		_, err := number(string(p.b[i:j]), i)
		return err
	}
}

// noExponent reports whether the number b has no exponent part: OPA holds
// every such number (ast.NumberChecked checks only the exponent forms), so
// number accepts it.
func noExponent(b []byte) bool { return !bytes.ContainsAny(b, "eE") }

func (p *parser) checkObject(i int) error {
	var small [smallObject][]byte // the keys so far, decoded
	n := 0
	var many map[string]struct{}
	i = p.space(i + 1)
	if p.b[i] == '}' {
		p.end = i + 1
		return nil
	}
	for {
		keyAt := i
		escaped, err := p.scanStr(i)
		if err != nil {
			return err
		}
		key := p.b[i+1 : p.end-1]
		if escaped {
			s, err := p.str(i)
			if err != nil {
				return err
			}
			key = []byte(s)
		}
		i = p.space(p.space(p.end) + 1) // past ':'
		if err := p.check(i); err != nil {
			return err
		}
		dup := false
		switch {
		case many != nil:
			_, dup = many[string(key)]
			many[string(key)] = struct{}{}
		default:
			for _, k := range small[:n] {
				if bytes.Equal(k, key) {
					dup = true
					break
				}
			}
			if n < smallObject {
				small[n] = key
				n++
			} else {
				many = make(map[string]struct{}, 2*smallObject)
				for _, k := range small {
					many[string(k)] = struct{}{}
				}
				many[string(key)] = struct{}{}
			}
		}
		if dup {
			return &Error{Reason: ReasonDupKey, Offset: keyAt}
		}
		i = p.space(p.end)
		if p.b[i] == '}' {
			p.end = i + 1
			return nil
		}
		i = p.space(i + 1) // past ','
	}
}

func (p *parser) checkArray(i int) error {
	i = p.space(i + 1)
	if p.b[i] == ']' {
		p.end = i + 1
		return nil
	}
	for {
		if err := p.check(i); err != nil {
			return err
		}
		i = p.space(p.end)
		if p.b[i] == ']' {
			p.end = i + 1
			return nil
		}
		i = p.space(i + 1)
	}
}
