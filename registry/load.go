package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/schema"
)

// SchemaFile is the embedded schema a registry document is validated against.
const SchemaFile = "registry.schema.json"

// Load reads the registry file at path: JSON when its extension is .json,
// YAML otherwise (.yaml, .yml, or anything else: YAML is a superset of JSON).
//
// The file is refused whole: on any error the registry is nil. A file that
// cannot be read returns the os error (errors.Is(err, fs.ErrNotExist) works);
// one that is not well-formed returns a [*ParseError]; one that is not a valid
// registry returns a [*ValidationError] listing every problem. Both carry the
// path in their File field.
func Load(path string) (*Registry, error) {
	data, err := fsx.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r, err := Parse(data, FormatOf(path))
	var pe *ParseError
	var ve *ValidationError
	switch {
	case errors.As(err, &pe):
		pe.File = path
	case errors.As(err, &ve):
		ve.File = path
	}
	return r, err
}

// FormatOf returns the format of the registry file named name, for Parse:
// FormatJSON when its extension is .json (in any case), FormatYAML
// otherwise (YAML is a superset of JSON). Every reader of a registry file
// detects its format here.
func FormatOf(name string) string {
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return FormatJSON
	}
	return FormatYAML
}

// Parse reads a registry document in format "yaml" (also "yml") or "json".
// The document is decoded into plain JSON values (numbers exact), validated
// against schema/registry.schema.json, then checked for what a schema cannot
// say: unique tool names, unique argument names within a row, required: true
// and default excluding each other, a known argument type, and a default (and
// enum values) valid for the argument. Every problem is reported at once in a
// [*ValidationError]; the registry is then nil. A row naming a section that
// sections does not list is not an error (it grants nobody, docs/contract.md §2): it is
// reported by [Registry.Warnings].
func Parse(data []byte, format string) (*Registry, error) {
	var (
		doc any
		err error
	)
	switch strings.ToLower(strings.TrimPrefix(format, ".")) {
	case FormatYAML, "yml", "":
		doc, err = decodeYAML(data)
	case FormatJSON:
		doc, err = decodeJSON(data)
	default:
		return nil, fmt.Errorf("registry: unknown format %q (want yaml or json)", format)
	}
	if err != nil {
		return nil, err
	}

	root, err := schema.Compile(SchemaFile)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	ps := &problems{doc: doc}
	if err := root.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, fmt.Errorf("registry: validating: %w", err)
		}
		ps.addSchemaError(root, doc, nil, ve)
	}
	warnings := &problems{doc: doc}
	check(doc, ps, warnings)
	if len(ps.findings) > 0 {
		return nil, &ValidationError{Problems: ps.sorted()}
	}

	// The document is valid: decoding it into the row types cannot fail on
	// shape, and numbers stay exact through json.Number.
	enc, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("registry: re-encoding: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(enc))
	dec.UseNumber()
	r := &Registry{}
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("registry: decoding: %w", err)
	}
	r.index = make(map[string]int, len(r.Tools))
	for i := range r.Tools {
		r.index[r.Tools[i].Name] = i
	}
	r.warnings = warnings.sorted()
	return r, nil
}
