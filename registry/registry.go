// Package registry reads toolgate's registry: the rows that name every tool an
// MCP server may expose, the method each dispatches to, the permission section
// it belongs to and the arguments it declares.
//
// A registry is loaded whole or not at all: [Load] and [Parse] validate the
// document against schema/registry.schema.json and then check what a schema
// cannot say (unique names, required xor default, known internal types, a
// default valid for its type). Every problem is reported at once in a
// [*ValidationError], each naming the row and the field:
//
//	r, err := registry.Load("registry.yaml")
//	var invalid *registry.ValidationError
//	if errors.As(err, &invalid) {
//		for _, p := range invalid.Problems {
//			log.Print(p) // tools[3] (getReward): arguments[0].type: unknown type "Mony"
//		}
//	}
//	tool := r.Tool("getReward")
//	inputSchema := tool.InputSchema() // what tools/list shows and calls bind against
//
// A loaded [*Registry] is immutable by convention: callers share it between
// goroutines and must not modify it.
package registry

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Registry is a validated registry document.
type Registry struct {
	// Sections maps a permission section's name to the roles that may use it.
	Sections map[string]Section `json:"sections,omitempty"`
	// History, when set, keeps each caller's calls for policies to read as
	// input.history (docs/contract.md §20); nil: there is no history.
	History *History `json:"history,omitempty"`
	// Tools are the rows, in the order of the file.
	Tools []Tool `json:"tools"`
	// Prompts are the prompts imported from upstreams, in configuration
	// order and then each upstream's order (never read from a file).
	Prompts []Prompt `json:"-"`

	// index maps a row's name to its position in Tools; built by Parse, nil
	// in a Registry built by hand.
	index map[string]int
	// warnings are Parse's findings that do not refuse the document.
	warnings []Problem
}

// History is the registry's history setting: input.history holds the
// caller's entries of the last Per, at most Max.
type History struct {
	// Per is a duration string (time.ParseDuration's), above zero.
	Per string `json:"per"`
	// Max is 1 to MaxHistory.
	Max int `json:"max"`
}

// MaxHistory is the most entries a history may hold.
const MaxHistory = 1000

// Window is Per as a duration; 0 when it is not one (a History that was
// not validated).
func (h *History) Window() time.Duration {
	d, err := time.ParseDuration(h.Per)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// Section lists the roles granted the tools of one permission section.
type Section struct {
	Roles []string `json:"roles"`
}

// Tool is one registry row.
type Tool struct {
	Name        string         `json:"name"`
	Method      string         `json:"method"`
	Section     string         `json:"section,omitempty"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	Driver      string         `json:"driver,omitempty"`
	Arguments   []Argument     `json:"arguments,omitempty"`
	Annotations map[string]any `json:"annotations,omitempty"`
	// Remember names the arguments whose values the row's calls leave in
	// the caller's history (docs/contract.md §20); for an imported row,
	// the upstream's remember setting for the tool.
	Remember []string `json:"remember,omitempty"`
	// Imported is set on a row imported from an upstream MCP server (the
	// binary's upstream import, docs/contract.md §15); nil on a row of a registry file,
	// which cannot set it (the registry schema has no such field).
	Imported *Imported `json:"imported,omitempty"`
}

// Imported is what a row imported from an upstream carries besides the
// row's own fields.
type Imported struct {
	// Upstream is the upstream's name (the SERVER of upstream:SERVER/TOOL).
	Upstream string `json:"upstream"`
	// Annotations are the annotations the upstream declared for the tool,
	// untrusted: they reach a policy as upstream_annotations. The row's
	// Annotations hold them too only when the operator trusts the upstream's
	// annotations. Nil when the upstream declared none.
	Annotations map[string]any `json:"annotations,omitempty"`
	// InputSchema is the upstream's inputSchema as listed (docs/contract.md
	// §19): the row's InputSchema and the schema its calls are checked
	// against. The row's Arguments then only name its top-level properties
	// for policies. Nil on a row built by hand: it has declared arguments.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema, Icons and Meta are the upstream's outputSchema, icons
	// and _meta as listed, served as they are; nil when it lists none.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	// Definition is the tool's whole definition as the upstream listed it
	// (every member, those toolgate does not know included, in the
	// upstream's spelling): tools/list serves it under the row's name and
	// with the row's annotations. Nil when it could not be read apart: the
	// fields above are served then.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// Listed reports whether the row's arguments are the upstream's schema as
// listed rather than declared arguments: an imported row with an
// inputSchema.
func (t *Tool) Listed() bool {
	return t.Imported != nil && t.Imported.InputSchema != nil
}

// UpstreamPrefix starts a method naming a tool of an upstream MCP server:
// upstream:SERVER/TOOL.
const UpstreamPrefix = "upstream:"

// Upstream returns SERVER when the row's method is upstream:SERVER/TOOL,
// else "".
func (t *Tool) Upstream() string {
	server, _, _ := ParseUpstreamMethod(t.Method)
	return server
}

// ParseUpstreamMethod splits a method upstream:SERVER/TOOL; ok is false (and
// both names "") for any other method.
func ParseUpstreamMethod(method string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(method, UpstreamPrefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "/")
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// Argument is one declared argument of a row.
type Argument struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
	// Default is the JSON value used when the argument is not sent; nil when
	// the row declares no default (a declared `default: null` is the JSON
	// literal null, not nil).
	Default json.RawMessage `json:"default,omitempty"`
	// Enum, Minimum, Maximum, Pattern and Items pass into the argument's JSON
	// Schema unchanged.
	Enum    []json.RawMessage `json:"enum,omitempty"`
	Minimum *json.Number      `json:"minimum,omitempty"`
	Maximum *json.Number      `json:"maximum,omitempty"`
	Pattern string            `json:"pattern,omitempty"`
	Items   json.RawMessage   `json:"items,omitempty"`
}

// Primitive argument types. Any other type names an internal type whose
// schema lives in schema/types/<Name>.json.
const (
	TypeInt    = "int"
	TypeFloat  = "float"
	TypeString = "string"
	TypeBool   = "bool"
	TypeArray  = "array"
	TypeObject = "object"
)

// DriverURL marks a generic URL driver row (docs/contract.md §7).
const DriverURL = "url"

// IsPrimitive reports whether t is one of the primitive argument types.
func IsPrimitive(t string) bool {
	switch t {
	case TypeInt, TypeFloat, TypeString, TypeBool, TypeArray, TypeObject:
		return true
	}
	return false
}

// Tool returns the row named name, or nil (also for a nil Registry). It is
// O(1) on a registry from [Parse] or [Load]; a Registry built by hand is
// searched row by row.
func (r *Registry) Tool(name string) *Tool {
	if r == nil {
		return nil
	}
	if r.index != nil {
		// The index is trusted only while it still agrees with Tools.
		i, ok := r.index[name]
		if ok && i < len(r.Tools) && r.Tools[i].Name == name {
			return &r.Tools[i]
		}
		if !ok && len(r.index) == len(r.Tools) {
			return nil
		}
	}
	for i := range r.Tools {
		if r.Tools[i].Name == name {
			return &r.Tools[i]
		}
	}
	return nil
}

// Warnings returns what Parse found worth knowing but not worth refusing the
// document for: a row naming a section that sections does not list (it
// grants nobody). The slice is the caller's.
func (r *Registry) Warnings() []Problem {
	if r == nil {
		return nil
	}
	return slices.Clone(r.warnings)
}
