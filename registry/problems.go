package registry

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	didyoumean "github.com/toolgate/toolgate/internal/suggest"
)

// finding is a problem with the JSON Pointer tokens of its location in the
// document, kept to sort problems into document order.
type finding struct {
	path []string
	msg  string
}

// problems collects findings against one decoded document.
type problems struct {
	doc      any
	findings []finding
}

func (ps *problems) add(path []string, format string, a ...any) {
	ps.findings = append(ps.findings, finding{slices.Clone(path), fmt.Sprintf(format, a...)})
}

// sorted returns the findings as Problems in document order: by row, then
// by path (array indexes compared as numbers), then by message.
func (ps *problems) sorted() []Problem {
	slices.SortStableFunc(ps.findings, func(a, b finding) int {
		if c := comparePaths(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.msg, b.msg)
	})
	out := make([]Problem, 0, len(ps.findings))
	for i, f := range ps.findings {
		if i > 0 && slices.Equal(f.path, ps.findings[i-1].path) && f.msg == ps.findings[i-1].msg {
			continue
		}
		out = append(out, ps.problem(f))
	}
	return out
}

func comparePaths(a, b []string) int {
	for i := range min(len(a), len(b)) {
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			if c := cmp.Compare(ai, bi); c != 0 {
				return c
			}
			continue
		}
		if c := cmp.Compare(fieldRank(a[i]), fieldRank(b[i])); c != 0 {
			return c
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// fieldOrder is the order fields are written in the SPEC's example (of the
// document, a row, an argument): problems are listed in it.
var fieldOrder = map[string]int{
	"sections": 1, "tools": 2,
	"name": 1, "method": 2, "section": 3, "title": 4, "description": 5, "driver": 6, "arguments": 7, "annotations": 8,
	"type": 2, "required": 3, "default": 4, "enum": 6, "minimum": 7, "maximum": 8, "pattern": 9, "items": 10,
}

func fieldRank(tok string) int {
	if r, ok := fieldOrder[tok]; ok {
		return r
	}
	return len(fieldOrder) + 1
}

// problem renders a finding: a path under tools/N becomes Row N and a field
// relative to the row, anything else a path from the root.
func (ps *problems) problem(f finding) Problem {
	p := Problem{Row: -1, Message: f.msg}
	v, path := ps.doc, f.path
	if len(path) >= 2 && path[0] == "tools" {
		if rows, ok := lookup(ps.doc, path[:1]).([]any); ok {
			if i, err := strconv.Atoi(path[1]); err == nil && i >= 0 && i < len(rows) {
				p.Row = i
				if row, ok := rows[i].(map[string]any); ok {
					p.Tool, _ = row["name"].(string)
				}
				v, path = rows[i], path[2:]
			}
		}
	}
	p.Field = renderPath(v, path)
	return p
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// renderPath renders JSON Pointer tokens as `arguments[0].type`, walking v so
// that an array index and an object key that happens to be numeric differ.
func renderPath(v any, path []string) string {
	var b strings.Builder
	for _, tok := range path {
		switch cur := v.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur) {
				v = cur[i]
			} else {
				v = nil
			}
			continue
		case map[string]any:
			v = cur[tok]
		default:
			v = nil
		}
		switch {
		case !identifier.MatchString(tok):
			b.WriteString("[" + strconv.Quote(tok) + "]")
		case b.Len() == 0:
			b.WriteString(tok)
		default:
			b.WriteString("." + tok)
		}
	}
	return b.String()
}

// lookup returns the value at path in v, or nil.
func lookup(v any, path []string) any {
	for _, tok := range path {
		switch cur := v.(type) {
		case map[string]any:
			v = cur[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur) {
				return nil
			}
			v = cur[i]
		default:
			return nil
		}
	}
	return v
}

// pointer splits a JSON Pointer as jsonschema writes it (tokens escaped with
// ~0, ~1, then URL path escaping).
func pointer(ptr string) []string {
	if ptr == "" || ptr == "/" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		if u, err := url.PathUnescape(t); err == nil {
			t = u
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// addSchemaError adds one finding per leaf of a jsonschema validation error.
// root is the schema that was validated, instance the value validated and
// base the path of that value in the document. Messages are toolgate's own
// where the keyword is a simple one; never a schema URL.
func (ps *problems) addSchemaError(root *jsonschema.Schema, instance any, base []string, ve *jsonschema.ValidationError) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			ps.addSchemaError(root, instance, base, c)
		}
		return
	}
	rel := pointer(ve.InstanceLocation)
	path := append(slices.Clone(base), rel...)
	v := lookup(instance, rel)
	kws := pointer(ve.KeywordLocation)
	if len(kws) == 0 {
		ps.add(path, "%s", ve.Message)
		return
	}
	kw := kws[len(kws)-1]
	s := navigate(root, kws[:len(kws)-1])
	if s == nil {
		ps.add(path, "%s", ve.Message)
		return
	}
	switch kw {
	case "type":
		ps.add(path, "must be %s", typeWords(s.Types))
	case "required":
		m, _ := v.(map[string]any)
		for _, name := range s.Required {
			if _, ok := m[name]; !ok {
				ps.add(path, "missing required field %q", name)
			}
		}
	case "additionalProperties":
		m, _ := v.(map[string]any)
		known := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			known = append(known, k)
		}
		slices.Sort(known)
		for k := range m {
			if _, ok := s.Properties[k]; ok {
				continue
			}
			if hint := suggest(k, known); hint != "" {
				ps.add(path, "unknown field %q (did you mean %q?)", k, hint)
			} else {
				ps.add(path, "unknown field %q", k)
			}
		}
	case "pattern":
		ps.add(path, "%s", patternWords(path, s))
	case "enum":
		ps.add(path, "must be one of %s", jsonList(s.Enum))
	case "minLength":
		if s.MinLength == 1 {
			ps.add(path, "must not be empty")
		} else {
			ps.add(path, "must be at least %d characters long", s.MinLength)
		}
	case "maxLength":
		ps.add(path, "must be at most %d characters long", s.MaxLength)
	case "minItems":
		ps.add(path, "must have at least %d items", s.MinItems)
	case "maxItems":
		ps.add(path, "must have at most %d items", s.MaxItems)
	default:
		// The library's leaf messages name values and limits, not schemas:
		// "must be >= 0 but found -1".
		ps.add(path, "%s", ve.Message)
	}
}

// patternWords explains a pattern failure, in words for the registry's own
// fields.
func patternWords(path []string, s *jsonschema.Schema) string {
	n := len(path)
	switch {
	case n == 3 && path[0] == "tools" && path[2] == "name":
		return `must be 1 to 128 letters, digits, "_", "." or "-"`
	case n == 3 && path[0] == "tools" && path[2] == "method":
		return "must be NAME (a Go tool method) or upstream:SERVER/TOOL"
	case n == 5 && path[0] == "tools" && path[2] == "arguments" && path[4] == "name":
		return `must be an identifier: a letter or "_", then letters, digits or "_" (at most 128)`
	}
	return fmt.Sprintf("must match the pattern %s", s.Pattern)
}

// navigate follows keyword-location tokens from root to the schema they
// name, or returns nil when the path is not one it knows.
func navigate(s *jsonschema.Schema, toks []string) *jsonschema.Schema {
	pos := 0
	next := func() (string, bool) {
		if pos >= len(toks) {
			return "", false
		}
		pos++
		return toks[pos-1], true
	}
	index := func(list []*jsonschema.Schema) *jsonschema.Schema {
		t, ok := next()
		if !ok {
			return nil
		}
		j, err := strconv.Atoi(t)
		if err != nil || j < 0 || j >= len(list) {
			return nil
		}
		return list[j]
	}
	for s != nil {
		kw, ok := next()
		if !ok {
			return s
		}
		switch kw {
		case "$ref":
			s = s.Ref
		case "$dynamicRef":
			s = s.DynamicRef
		case "properties":
			t, ok := next()
			if !ok {
				return nil
			}
			s = s.Properties[t]
		case "items":
			if it, ok := s.Items.(*jsonschema.Schema); ok {
				s = it
			} else {
				s = s.Items2020
			}
		case "additionalProperties":
			s, _ = s.AdditionalProperties.(*jsonschema.Schema)
		case "propertyNames":
			s = s.PropertyNames
		case "prefixItems":
			s = index(s.PrefixItems)
		case "allOf":
			s = index(s.AllOf)
		case "anyOf":
			s = index(s.AnyOf)
		case "oneOf":
			s = index(s.OneOf)
		case "not":
			s = s.Not
		case "if":
			s = s.If
		case "then":
			s = s.Then
		case "else":
			s = s.Else
		case "contains":
			s = s.Contains
		default:
			return nil
		}
	}
	return nil
}

func typeWords(types []string) string {
	words := make([]string, len(types))
	for i, t := range types {
		switch t {
		case "object", "array", "integer":
			words[i] = "an " + t
		case "null":
			words[i] = "null"
		default:
			words[i] = "a " + t
		}
	}
	if len(words) == 0 {
		return "of another type"
	}
	return strings.Join(words, " or ")
}

func jsonList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

// suggest returns the candidate closest to s within an edit distance of 2,
// or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := didyoumean.Distance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
