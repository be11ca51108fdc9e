package regoload

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/fsx"
)

// DefaultCapabilities returns the built-ins of the OPA version toolgate is
// built with, without those named in network, and with no network host
// allowed: engine.DefaultCapabilities, as the server compiles with it and
// `toolgate test` too.
func DefaultCapabilities(network []string) *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(c.Builtins, func(b *ast.Builtin) bool { return slices.Contains(network, b.Name) })
	c.AllowNet = []string{}
	return c
}

// LoadCapabilities reads an OPA capabilities JSON file: the one reader of
// engine.LoadCapabilities and of `toolgate test`.
func LoadCapabilities(path string) (*ast.Capabilities, error) {
	data, err := fsx.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	c, err := ast.LoadCapabilitiesJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("capabilities %s: %w", path, err)
	}
	return c, nil
}
