package registry

import (
	"bytes"
	"encoding/json"

	"github.com/toolgate/toolgate/schema"
)

// InputSchema returns the JSON Schema of the row's arguments: the
// inputSchema tools/list shows, and the schema calls are bound against (docs/contract.md
// §1, STYLE practice 5: both come from here).
//
//	{"type": "object", "properties": {NAME: Argument.Schema(), ...},
//	 "required": [NAME, ...]}
//
// "required" is present only when an argument is required. Arguments the row
// does not declare are dropped by the binder, not refused, so the schema
// does not set additionalProperties. Values are plain JSON values (numbers as
// json.Number): json.Marshal renders it and [schema.CompileValue] compiles it.
// The map is freshly built on every call and is the caller's.
//
// An imported row's inputSchema is the upstream's as listed (Imported.
// InputSchema, docs/contract.md §19), every keyword kept; its Arguments
// only name the schema's top-level properties.
func (t *Tool) InputSchema() map[string]any {
	if t.Listed() {
		if m, ok := plain(t.Imported.InputSchema).(map[string]any); ok {
			return m
		}
		return map[string]any{"not": map[string]any{}} // not reached: import keeps objects only
	}
	props := make(map[string]any, len(t.Arguments))
	var required []any
	for i := range t.Arguments {
		a := &t.Arguments[i]
		props[a.Name] = a.Schema()
		if a.Required {
			required = append(required, a.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// ArgumentSchemas returns Argument.Schema for each declared argument, in
// declared order, so a binder can validate argument by argument and name the
// first wrong one. The slice and maps are the caller's.
func (t *Tool) ArgumentSchemas() []map[string]any {
	out := make([]map[string]any, len(t.Arguments))
	for i := range t.Arguments {
		out[i] = t.Arguments[i].Schema()
	}
	return out
}

// Schema returns the JSON Schema of one argument's value: int → integer,
// float → number, bool → boolean, string, array and object as named, an
// internal type → its schema from schema/types inlined (without $schema and
// $id), plus description, default, enum, minimum, maximum, pattern and items
// when the row sets them. A type that is neither (only possible in a Registry
// built by hand: Parse refuses it) yields {"not": {}}, which nothing matches.
// The map is freshly built on every call and is the caller's.
//
// An internal type's schema is inlined as is: one with local "#/..." $refs
// would need them rewritten; none has any today.
func (a *Argument) Schema() map[string]any {
	var s map[string]any
	switch a.Type {
	case TypeInt:
		s = map[string]any{"type": "integer"}
	case TypeFloat:
		s = map[string]any{"type": "number"}
	case TypeString:
		s = map[string]any{"type": "string"}
	case TypeBool:
		s = map[string]any{"type": "boolean"}
	case TypeArray:
		s = map[string]any{"type": "array"}
	case TypeObject:
		s = map[string]any{"type": "object"}
	default:
		raw, ok := schema.TypeSchema(a.Type)
		if m, isMap := plain(raw).(map[string]any); ok && isMap {
			s = m
			delete(s, "$schema")
			delete(s, "$id")
		} else {
			s = map[string]any{"not": map[string]any{}}
		}
	}
	if a.Description != "" {
		s["description"] = a.Description
	}
	if a.Default != nil {
		s["default"] = plain(a.Default)
	}
	if a.Enum != nil {
		enum := make([]any, len(a.Enum))
		for i, e := range a.Enum {
			enum[i] = plain(e)
		}
		s["enum"] = enum
	}
	if a.Minimum != nil {
		s["minimum"] = *a.Minimum
	}
	if a.Maximum != nil {
		s["maximum"] = *a.Maximum
	}
	if a.Pattern != "" {
		s["pattern"] = a.Pattern
	}
	if a.Items != nil {
		s["items"] = plain(a.Items)
	}
	return s
}

// plain decodes raw JSON into plain values with exact numbers; nil for
// malformed JSON (possible only in a Registry built by hand).
func plain(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}
