package registry

import (
	"fmt"
	"strings"
)

// Document decodes a registry document in format "yaml" or "json" into the
// plain JSON values Parse validates (map[string]any, []any, string, bool,
// nil, json.Number exact), without validating it: the form an OPA bundle
// holds it in as data under toolgate/registry (docs/contract.md §14). Call Parse to
// validate it.
func Document(data []byte, format string) (any, error) {
	switch strings.ToLower(strings.TrimPrefix(format, ".")) {
	case FormatYAML, "yml", "":
		return decodeYAML(data)
	case FormatJSON:
		return decodeJSON(data)
	}
	return nil, fmt.Errorf("registry: unknown format %q (want yaml or json)", format)
}
