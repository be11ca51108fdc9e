package mcpadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// bind validates the arguments as sent against the row, argument by
// argument in declared order, and returns them ready for the method: sent
// or defaulted values of declared arguments only. The first wrong argument
// is named; its text comes from the row, never from the validator.
func bind(t *registry.Tool, schemas []*jsonschema.Schema, m methods.Method, raw json.RawMessage) ([]toolcall.Arg, error) {
	var sent map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		// The grant decision already read this object exactly (docs/contract.md §3);
		// reading it as no arguments at all would be another input.
		if err := json.Unmarshal(trimmed, &sent); err != nil {
			return nil, fmt.Errorf("read the arguments object: %w", err)
		}
	}
	args := make([]toolcall.Arg, 0, len(t.Arguments))
	for j := range t.Arguments {
		a := &t.Arguments[j]
		argErr := func(p toolcall.ArgumentProblem, err error) error { return argumentError(a, p, err) }
		if !m.HasArgument(a.Name) {
			return nil, argErr(toolcall.ArgUnknown, fmt.Errorf("the method has no argument %q", a.Name))
		}
		v, ok := sent[a.Name]
		if !ok {
			switch {
			case a.Required:
				return nil, argErr(toolcall.ArgMissing, nil)
			case a.Default != nil:
				v = a.Default
			default:
				continue
			}
		}
		val, err := decodeValue(v)
		if err != nil {
			return nil, argErr(toolcall.ArgInvalid, err)
		}
		// The validator panics on numbers it cannot represent (a huge
		// exponent makes big.Rat refuse the value): a value it cannot take.
		if err := safely(func() error { return schemas[j].Validate(val) }); err != nil {
			var pe *PanicError
			if errors.As(err, &pe) {
				return nil, argErr(toolcall.ArgInvalid, errors.New("the validator could not read the value"))
			}
			return nil, argErr(toolcall.ArgInvalid, violation(err))
		}
		args = append(args, toolcall.Arg{Name: a.Name, Value: v})
	}
	return args, nil
}

// decodeValue decodes an argument's JSON value for the validator, numbers
// as json.Number. A string without escapes, control characters or invalid
// UTF-8 (what string arguments mostly are) is its bytes between the quotes:
// that is what the decoder makes of it, without a decoder.
// FuzzDecodeValue checks the two against each other.
func decodeValue(v json.RawMessage) (any, error) {
	if plainString(v) {
		return string(v[1 : len(v)-1]), nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return nil, err
	}
	return val, nil
}

// plainString reports whether v is exactly one JSON string whose bytes
// decode to themselves.
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(inner)
}

// SchemaViolation says which keywords of an argument's schema a value
// failed. Unlike the validator's own message it never quotes the value:
// argument values are not logged.
type SchemaViolation struct {
	Keywords []string
}

func (v *SchemaViolation) Error() string {
	return "the value fails the schema at " + strings.Join(v.Keywords, ", ")
}

func violation(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return errors.New("the value fails its schema")
	}
	var kws []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			kws = append(kws, e.KeywordLocation)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return &SchemaViolation{Keywords: kws}
}
