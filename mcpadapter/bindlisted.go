package mcpadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// bindListed checks the arguments as sent against an imported row's
// inputSchema as listed (docs/contract.md §19), compiled in the dialect it
// declares, and returns every sent property, in the order sent, with its
// value as sent: nothing is dropped and nothing defaulted (the upstream
// applies its own defaults).
//
// When the object fails the schema, the first failing top-level property —
// in the order of the row's Arguments (the schema's required properties,
// then the others by name), then the order sent — gets §5's answer: missing
// when a "required" keyword names it and it was not sent, else an invalid
// value, with the type the row's Arguments give it (none: the answer
// without a type). The validator's text is only logged.
func bindListed(t *registry.Tool, s *jsonschema.Schema, raw json.RawMessage) ([]toolcall.Arg, error) {
	args, err := sentArguments(raw)
	if err != nil {
		return nil, err
	}
	obj := make(map[string]any, len(args))
	for _, a := range args {
		v, err := decodeValue(a.Value)
		if err != nil {
			return nil, fmt.Errorf("read argument: %w", err) // not reached: the grant decision read it
		}
		obj[a.Name] = v
	}
	err = safely(func() error { return s.Validate(obj) })
	if err == nil {
		return args, nil
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		err = errors.New("the validator could not read the value")
	}
	if ae := firstFailing(t, args, err); ae != nil {
		return nil, ae
	}
	return nil, fmt.Errorf("the arguments fail the tool's inputSchema at no property: %w", violation(err))
}

// sentArguments reads the arguments object as sent: its properties in the
// order sent, each value's bytes as sent. Anything but an object is no
// arguments (docs/contract.md §3).
func sentArguments(raw json.RawMessage) ([]toolcall.Arg, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read the arguments object: %w", err)
	}
	var args []toolcall.Arg
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read the arguments object: %w", err)
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("read the arguments object: %w", err)
		}
		args = append(args, toolcall.Arg{Name: name, Value: v})
	}
	return args, nil
}

// firstFailing names the first top-level property the validation error
// blames, or returns nil when it blames none.
func firstFailing(t *registry.Tool, sent []toolcall.Arg, err error) *toolcall.ArgumentError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		// A value the validator could not read: blame the first property
		// sent, the object itself cannot be wrong.
		if len(sent) == 0 {
			return nil
		}
		return listedError(t, sent[0].Name, toolcall.ArgInvalid, err)
	}
	isSent := make(map[string]bool, len(sent))
	for _, a := range sent {
		isSent[a.Name] = true
	}
	missing, invalid := map[string]bool{}, map[string]bool{}
	var schemaValue map[string]any // decoded when a keyword at the root needs reading
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if rest, ok := strings.CutPrefix(e.InstanceLocation, "/"); ok {
			first, _, _ := strings.Cut(rest, "/")
			invalid[unescapePointer(first)] = true
			return
		}
		switch keyword := e.KeywordLocation[strings.LastIndexByte(e.KeywordLocation, '/')+1:]; keyword {
		case "required":
			if schemaValue == nil {
				schemaValue = t.InputSchema()
			}
			for _, n := range requiredAt(schemaValue, e.AbsoluteKeywordLocation) {
				if !isSent[n] {
					missing[n] = true
				}
			}
		case "additionalProperties", "unevaluatedProperties", "propertyNames":
			if schemaValue == nil {
				schemaValue = t.InputSchema()
			}
			props, _ := schemaValue["properties"].(map[string]any)
			for _, a := range sent {
				if _, ok := props[a.Name]; !ok {
					invalid[a.Name] = true
				}
			}
		}
	}
	walk(ve)
	detail := violation(err)
	for _, a := range t.Arguments {
		switch {
		case missing[a.Name]:
			return listedError(t, a.Name, toolcall.ArgMissing, detail)
		case invalid[a.Name]:
			return listedError(t, a.Name, toolcall.ArgInvalid, detail)
		}
	}
	for _, a := range sent {
		if invalid[a.Name] {
			return listedError(t, a.Name, toolcall.ArgInvalid, detail)
		}
	}
	// A required property the schema names nowhere at its top level.
	if names := slices.Sorted(func(yield func(string) bool) {
		for n := range missing {
			if !yield(n) {
				return
			}
		}
	}); len(names) > 0 {
		return listedError(t, names[0], toolcall.ArgMissing, detail)
	}
	return nil
}

// listedError is the ArgumentError of property name of a listed row: its
// type is the one the row's Arguments give, shown when there is one.
func listedError(t *registry.Tool, name string, p toolcall.ArgumentProblem, err error) *toolcall.ArgumentError {
	ae := &toolcall.ArgumentError{Problem: p, Name: name, Internal: true, Err: err}
	if a := declared(t, name); a != nil && a.Type != "" {
		ae.Type, ae.Internal = a.Type, false
	}
	return ae
}

// requiredAt is the "required" array at a keyword's absolute location in
// the schema (the fragment after '#', a JSON pointer); the schema's
// top-level "required" when the location cannot be followed.
func requiredAt(schemaValue map[string]any, location string) []string {
	var node any = schemaValue
	if _, frag, ok := strings.Cut(location, "#"); ok {
		if f, err := url.PathUnescape(frag); err == nil {
			frag = f
		}
		for seg := range strings.SplitSeq(strings.TrimPrefix(frag, "/"), "/") {
			if seg == "" {
				continue
			}
			seg = unescapePointer(seg)
			switch n := node.(type) {
			case map[string]any:
				node = n[seg]
			case []any:
				var i int
				if _, err := fmt.Sscanf(seg, "%d", &i); err != nil || i < 0 || i >= len(n) {
					node = nil
				} else {
					node = n[i]
				}
			default:
				node = nil
			}
		}
	} else {
		node = nil
	}
	list, ok := node.([]any)
	if !ok {
		list, _ = schemaValue["required"].([]any)
	}
	var names []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			names = append(names, s)
		}
	}
	return names
}

// unescapePointer undoes a JSON pointer segment's escapes (RFC 6901).
func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
