package schema

import (
	"regexp"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// CompileListed compiles an upstream tool's inputSchema as listed
// (docs/contract.md §19) the way CompileValue does — in the dialect its
// $schema declares, 2020-12 when it declares none — except for regular
// expressions Go cannot run (ECMA-262 lookaround and backreferences, which
// JavaScript and Python servers emit): a "pattern" or "patternProperties"
// entry that RE2 does not compile is left out of the check (the upstream
// checks it) and named in skipped, by JSON pointer. v is not modified.
func CompileListed(v map[string]any) (s *jsonschema.Schema, skipped []string, err error) {
	checked := withoutForeignRegexps(v, "", &skipped)
	s, err = CompileValue(checked)
	return s, skipped, err
}

// withoutForeignRegexps copies v without the regular expressions RE2 does
// not compile. Maps of names to schemas (properties and the like) are
// walked as such: a property named "pattern" is not a keyword.
func withoutForeignRegexps(v any, at string, skipped *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		return schemaObject(x, at, skipped)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutForeignRegexps(e, at+"/"+strconv.Itoa(i), skipped)
		}
		return out
	}
	return v
}

var namedSchemas = map[string]bool{
	"properties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
	"patternProperties": true,
}

func schemaObject(m map[string]any, at string, skipped *[]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, val := range m {
		here := at + "/" + escapePointer(k)
		if k == "pattern" {
			if p, ok := val.(string); ok {
				if _, err := regexp.Compile(p); err != nil {
					*skipped = append(*skipped, here)
					continue
				}
			}
		}
		if named, ok := val.(map[string]any); ok && namedSchemas[k] {
			sub := make(map[string]any, len(named))
			for name, s := range named {
				where := here + "/" + escapePointer(name)
				if k == "patternProperties" {
					if _, err := regexp.Compile(name); err != nil {
						*skipped = append(*skipped, where)
						continue
					}
				}
				sub[name] = withoutForeignRegexps(s, where, skipped)
			}
			out[k] = sub
			continue
		}
		if k == "enum" || k == "const" || k == "default" || k == "examples" {
			out[k] = val // values, not schemas
			continue
		}
		out[k] = withoutForeignRegexps(val, here, skipped)
	}
	return out
}

func escapePointer(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, s[i])
		}
	}
	return string(b)
}
