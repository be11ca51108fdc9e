package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolgate/toolgate/internal/exactjson"
	"github.com/toolgate/toolgate/schema"
)

// check adds the problems a JSON Schema cannot express. It reads the decoded
// document defensively: a value of the wrong shape was already reported by
// the schema and is skipped here, so every mistake is reported once.
func check(doc any, ps, warnings *problems) {
	root, _ := doc.(map[string]any)
	rows, _ := root["tools"].([]any)
	sections, _ := root["sections"].(map[string]any)
	if h, ok := root["history"].(map[string]any); ok {
		if per, ok := h["per"].(string); ok {
			if d, err := time.ParseDuration(per); err != nil || d <= 0 {
				ps.add([]string{"history", "per"}, "%q is not a positive duration such as \"10m\" or \"24h\"", per)
			}
		}
	}
	first := map[string]int{}
	for i, row := range rows {
		m, ok := row.(map[string]any)
		if !ok {
			continue
		}
		path := []string{"tools", strconv.Itoa(i)}
		if name, ok := m["name"].(string); ok {
			if j, dup := first[name]; dup {
				ps.add(append(path, "name"), "duplicate tool name %q (also tools[%d])", name, j)
			} else {
				first[name] = i
			}
		}
		if sec, ok := m["section"].(string); ok && sec != "" {
			if _, listed := sections[sec]; !listed {
				warnings.add(append(path, "section"), "section %q is not in sections: the row grants nobody", sec)
			}
		}
		if ann, ok := m["annotations"]; ok {
			checkRepresentable(ann, append(path, "annotations"), ps)
		}
		args, _ := m["arguments"].([]any)
		firstArg := map[string]int{}
		for j, a := range args {
			am, ok := a.(map[string]any)
			if !ok {
				continue
			}
			checkArgument(am, append(path, "arguments", strconv.Itoa(j)), firstArg, j, ps)
		}
	}
}

func checkArgument(am map[string]any, path []string, firstArg map[string]int, j int, ps *problems) {
	at := func(field string) []string { return append(path[:len(path):len(path)], field) }
	if name, ok := am["name"].(string); ok {
		if k, dup := firstArg[name]; dup {
			ps.add(at("name"), "duplicate argument name %q (also arguments[%d])", name, k)
		} else {
			firstArg[name] = j
		}
	}
	def, hasDefault := am["default"]
	if hasDefault && !checkRepresentable(def, at("default"), ps) {
		hasDefault = false
	}
	if req, _ := am["required"].(bool); req && hasDefault {
		ps.add(path, "required: true and default exclude each other (an argument with a default is never missing)")
		hasDefault = false
	}
	typ, ok := am["type"].(string)
	if !ok {
		return // the schema said so
	}
	if !IsPrimitive(typ) && !schema.IsType(typ) {
		known := append([]string{TypeInt, TypeFloat, TypeString, TypeBool, TypeArray, TypeObject}, schema.TypeNames()...)
		if hint := suggest(typ, known); hint != "" {
			ps.add(at("type"), "unknown type %q (did you mean %q?)", typ, hint)
		} else {
			ps.add(at("type"), "unknown type %q (want one of %s)", typ, strings.Join(known, ", "))
		}
		return
	}
	valid := true
	if pat, ok := am["pattern"].(string); ok {
		if _, err := regexp.Compile(pat); err != nil {
			ps.add(at("pattern"), "not a valid regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			valid = false
		}
	}
	if items, ok := am["items"].(map[string]any); ok {
		if _, err := schema.CompileValue(items); err != nil {
			ps.add(at("items"), "not a valid JSON Schema")
			valid = false
		}
	}
	if enum, ok := am["enum"].([]any); ok {
		for k, v := range enum {
			if !checkValue(typ, v, append(at("enum"), strconv.Itoa(k)), ps) {
				valid = false
			}
		}
	}
	if !hasDefault || !checkValue(typ, def, at("default"), ps) || !valid {
		return
	}
	// The default has the right type; it must also pass the argument's
	// other constraints (enum, minimum, maximum, pattern, items).
	var arg Argument
	if err := roundTrip(am, &arg); err != nil {
		return // a shape the schema reported
	}
	s := arg.Schema()
	delete(s, "default")
	compiled, err := schema.CompileValue(s)
	if err != nil {
		return
	}
	if err := compiled.Validate(def); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			ps.addSchemaError(compiled, def, at("default"), ve)
		}
	}
}

// checkRepresentable reports whether v can be represented exactly in a
// policy's input document (annotations and defaults are part of it), adding
// a problem at path when it cannot: a number beyond OPA's range, such as
// 1e100000, would otherwise reach policies as something else, or not at all.
func checkRepresentable(v any, path []string, ps *problems) bool {
	_, err := exactjson.GoValue(v)
	var xe *exactjson.Error
	if !errors.As(err, &xe) {
		return err == nil
	}
	at := path
	if xe.Path != "." && xe.Path != "" {
		at = append(path[:len(path):len(path)], strings.Split(xe.Path, ".")...)
	}
	ps.add(at, "cannot be represented in the input document: %s", xe.Reason)
	return false
}

// checkValue reports whether v is a value of the argument type typ, adding
// a problem at path when it is not. int is strict: 1.0 and 1e3 are not ints
// (the binder decodes into a Go int).
func checkValue(typ string, v any, path []string, ps *problems) bool {
	ok := true
	switch typ {
	case TypeInt:
		n, isNum := v.(json.Number)
		if _, isInt := new(big.Int).SetString(string(n), 10); !isNum || !isInt {
			ps.add(path, "must be an integer")
			ok = false
		}
	case TypeFloat:
		if _, isNum := v.(json.Number); !isNum {
			ps.add(path, "must be a number")
			ok = false
		}
	case TypeString:
		if _, ok = v.(string); !ok {
			ps.add(path, "must be a string")
		}
	case TypeBool:
		if _, ok = v.(bool); !ok {
			ps.add(path, "must be a boolean (true or false)")
		}
	case TypeArray:
		if _, ok = v.([]any); !ok {
			ps.add(path, "must be an array")
		}
	case TypeObject:
		if _, ok = v.(map[string]any); !ok {
			ps.add(path, "must be an object")
		}
	default:
		s, err := schema.Compile(schema.TypeFile(typ))
		if err != nil {
			ps.add(path, "type %s cannot be checked: its schema does not compile", typ)
			return false
		}
		if err := s.Validate(v); err != nil {
			var ve *jsonschema.ValidationError
			if errors.As(err, &ve) {
				ps.addSchemaError(s, v, path, ve)
			} else {
				ps.add(path, "is not a valid %s", typ)
			}
			ok = false
		}
	}
	return ok
}

// roundTrip decodes a plain JSON value into out, numbers exact.
func roundTrip(v any, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(out)
}
