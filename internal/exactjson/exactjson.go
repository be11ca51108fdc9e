// Package exactjson converts JSON, and the plain Go values decoded from it,
// into OPA values exactly, or not at all.
//
// A policy must see exactly what a method, a hook or an upstream server
// gets (docs/contract.md §3). OPA's own conversions are lenient where that matters: a
// lone surrogate escape becomes U+FFFD, a key sent twice keeps its last
// value, a float64 NaN becomes the string "NaN" as a number. Other readers of
// the same bytes may decide otherwise, so this package refuses every value
// that two conforming JSON readers could read differently, or that OPA
// cannot hold:
//
//   - bytes that are not valid JSON, or not valid UTF-8 (RFC 8259 §8.1);
//   - a string escape that is a lone UTF-16 surrogate (\ud800 alone);
//   - an object with a key that occurs twice (after unescaping);
//   - a number OPA cannot represent (ast.NumberChecked: a binary exponent
//     beyond ±100000, such as 1e100000);
//   - for Go values, a float that is not finite and a string that is not
//     valid UTF-8.
//
// What it accepts, every conforming reader reads as the same value (RFC 7493,
// I-JSON, minus its advice on number precision: OPA keeps numbers exact).
package exactjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// ErrInexact is wrapped by every *Error.
var ErrInexact = errors.New("value cannot be represented exactly")

// Reasons an *Error gives.
const (
	ReasonSyntax    = "not valid JSON"
	ReasonUTF8      = "not valid UTF-8"
	ReasonSurrogate = "a string holds a lone UTF-16 surrogate escape"
	ReasonDupKey    = "an object holds a key twice"
	ReasonNumber    = "a number beyond the engine's range"
	ReasonNotFinite = "a number that is not finite (NaN or infinity)"
	ReasonGoType    = "a value that is not plain JSON"
)

// Error says why a value cannot be represented. It never holds the value,
// nor (for JSON bytes) a key: those may be a client's data.
type Error struct {
	// Reason is one of the Reason constants.
	Reason string
	// Offset is the byte offset in the JSON input where the problem was
	// found; -1 for Go values.
	Offset int
	// Path locates the problem in a Go value (claims, annotations), as keys
	// and indexes joined by dots; empty for JSON input.
	Path string
	// Err is an underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	s := e.Reason
	switch {
	case e.Path != "":
		s += " at " + e.Path
	case e.Offset >= 0:
		s += " at byte " + strconv.Itoa(e.Offset)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInexact, e.Err}
	}
	return []error{ErrInexact}
}

// Value converts one JSON value (surrounding whitespace allowed, nothing
// else) to an OPA value, or returns an *Error. The work is linear in len(raw).
func Value(raw []byte) (ast.Value, error) {
	if !json.Valid(raw) {
		return nil, &Error{Reason: ReasonSyntax, Offset: 0}
	}
	if !utf8.Valid(raw) {
		return nil, &Error{Reason: ReasonUTF8, Offset: invalidUTF8At(raw)}
	}
	p := parser{b: raw}
	v, err := p.value(p.space(0))
	if err != nil {
		return nil, err
	}
	return v, nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// parser reads JSON already known to be valid and valid UTF-8.
type parser struct {
	b   []byte
	end int // index after the last value read
}

func (p *parser) space(i int) int {
	for i < len(p.b) {
		switch p.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value reads the value at i; p.end is set past it.
func (p *parser) value(i int) (ast.Value, error) {
	switch c := p.b[i]; {
	case c == '{':
		return p.object(i)
	case c == '[':
		return p.array(i)
	case c == '"':
		s, err := p.str(i)
		if err != nil {
			return nil, err
		}
		return ast.String(s), nil
	case c == 't':
		p.end = i + 4
		return ast.Boolean(true), nil
	case c == 'f':
		p.end = i + 5
		return ast.Boolean(false), nil
	case c == 'n':
		p.end = i + 4
		return ast.Null{}, nil
	default:
		j := i
		for j < len(p.b) && isNumByte(p.b[j]) {
			j++
		}
		p.end = j
		return number(string(p.b[i:j]), i)
	}
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func number(s string, at int) (ast.Value, error) {
	if t := ast.InternedIntNumberTermFromString(s); t != nil {
		return t.Value, nil
	}
	n, err := ast.NumberChecked(s)
	if err != nil {
		return nil, &Error{Reason: ReasonNumber, Offset: at}
	}
	return n, nil
}

func (p *parser) object(i int) (ast.Value, error) {
	obj := ast.NewObject()
	i = p.space(i + 1)
	if p.b[i] == '}' {
		p.end = i + 1
		return obj, nil
	}
	for {
		keyAt := i
		k, err := p.str(i)
		if err != nil {
			return nil, err
		}
		key := ast.StringTerm(k)
		i = p.space(p.space(p.end) + 1) // past ':'
		v, err := p.value(i)
		if err != nil {
			return nil, err
		}
		if obj.Get(key) != nil {
			return nil, &Error{Reason: ReasonDupKey, Offset: keyAt}
		}
		obj.Insert(key, ast.NewTerm(v))
		i = p.space(p.end)
		if p.b[i] == '}' {
			p.end = i + 1
			return obj, nil
		}
		i = p.space(i + 1) // past ','
	}
}

func (p *parser) array(i int) (ast.Value, error) {
	var elems []*ast.Term
	i = p.space(i + 1)
	if p.b[i] == ']' {
		p.end = i + 1
		return ast.NewArray(), nil
	}
	for {
		v, err := p.value(i)
		if err != nil {
			return nil, err
		}
		elems = append(elems, ast.NewTerm(v))
		i = p.space(p.end)
		if p.b[i] == ']' {
			p.end = i + 1
			return ast.NewArray(elems...), nil
		}
		i = p.space(i + 1)
	}
}

// str decodes the string at i, refusing lone surrogate escapes, which
// encoding/json (and so OPA) would silently turn into U+FFFD.
func (p *parser) str(i int) (string, error) {
	escaped, err := p.scanStr(i)
	if err != nil {
		return "", err
	}
	j := p.end - 1
	if !escaped {
		return string(p.b[i+1 : j]), nil
	}
	var s string
	if err := json.Unmarshal(p.b[i:j+1], &s); err != nil {
		return "", &Error{Reason: ReasonSyntax, Offset: i, Err: err} // not reached: valid JSON
	}
	return s, nil
}

// scanStr walks the string at i as str reads it, without decoding it: p.end
// is set past it, and escaped says whether it holds an escape.
func (p *parser) scanStr(i int) (escaped bool, err error) {
	j := i + 1
	for ; p.b[j] != '"'; j++ {
		if p.b[j] != '\\' {
			continue
		}
		escaped = true
		j++
		if p.b[j] != 'u' {
			continue
		}
		r := hex4(p.b[j+1 : j+5])
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00:
			// A high surrogate must be followed by an escaped low one.
			k := j + 5
			if k+6 > len(p.b) || p.b[k] != '\\' || p.b[k+1] != 'u' {
				return false, &Error{Reason: ReasonSurrogate, Offset: j - 1}
			}
			if lo := hex4(p.b[k+2 : k+6]); lo < 0xdc00 || lo > 0xdfff {
				return false, &Error{Reason: ReasonSurrogate, Offset: j - 1}
			}
			j = k + 5
		case utf16.IsSurrogate(r):
			return false, &Error{Reason: ReasonSurrogate, Offset: j - 1}
		default:
			j += 4
		}
	}
	p.end = j + 1
	return escaped, nil
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// GoValue converts a plain Go value, as decoded from JSON or YAML (nil,
// bool, string, the integer and float kinds, json.Number, map[string]any,
// []any, []string), to an OPA value, or returns an *Error whose Path names
// where the problem is. Other types are converted through their JSON
// encoding, read by Value.
func GoValue(v any) (ast.Value, error) {
	return goValue(v, "")
}

func goValue(v any, path string) (ast.Value, error) {
	fail := func(reason string, err error) (ast.Value, error) {
		return nil, &Error{Reason: reason, Offset: -1, Path: pathOrRoot(path), Err: err}
	}
	switch x := v.(type) {
	case nil:
		return ast.Null{}, nil
	case bool:
		return ast.Boolean(x), nil
	case string:
		if !utf8.ValidString(x) {
			return fail(ReasonUTF8, nil)
		}
		return ast.String(x), nil
	case json.Number:
		n, err := number(string(x), -1)
		if err != nil {
			return fail(ReasonNumber, nil)
		}
		return n, nil
	case int:
		return ast.IntNumberTerm(x).Value, nil
	case int64:
		return ast.Number(strconv.FormatInt(x, 10)), nil
	case int32:
		return ast.Number(strconv.FormatInt(int64(x), 10)), nil
	case uint64:
		return ast.Number(strconv.FormatUint(x, 10)), nil
	case uint:
		return ast.Number(strconv.FormatUint(uint64(x), 10)), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fail(ReasonNotFinite, nil)
		}
		return ast.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fail(ReasonNotFinite, nil)
		}
		return ast.Number(strconv.FormatFloat(float64(x), 'g', -1, 32)), nil
	case []string:
		elems := make([]*ast.Term, len(x))
		for i, s := range x {
			if !utf8.ValidString(s) {
				return nil, &Error{Reason: ReasonUTF8, Offset: -1, Path: join(path, strconv.Itoa(i))}
			}
			elems[i] = ast.StringTerm(s)
		}
		return ast.NewArray(elems...), nil
	case []any:
		elems := make([]*ast.Term, len(x))
		for i, e := range x {
			ev, err := goValue(e, join(path, strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			elems[i] = ast.NewTerm(ev)
		}
		return ast.NewArray(elems...), nil
	case map[string]any:
		obj := ast.NewObjectWithCapacity(len(x))
		for k, e := range x {
			if !utf8.ValidString(k) {
				return fail(ReasonUTF8, nil)
			}
			ev, err := goValue(e, join(path, k))
			if err != nil {
				return nil, err
			}
			obj.Insert(ast.StringTerm(k), ast.NewTerm(ev))
		}
		return obj, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Map && rv.Type().Key().Kind() != reflect.String {
		return fail(ReasonGoType, fmt.Errorf("a map keyed by %s", rv.Type().Key()))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fail(ReasonGoType, err)
	}
	out, err := Value(b)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, &Error{Reason: e.Reason, Offset: -1, Path: pathOrRoot(path)}
		}
		return nil, err
	}
	return out, nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func pathOrRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}
