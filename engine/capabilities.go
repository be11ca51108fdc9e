package engine

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/internal/regoload"
)

// NetworkBuiltins are the OPA built-ins that reach the network. The default
// capabilities leave them out (docs/contract.md §11): a policy is a decision, not a
// client of other servers.
var NetworkBuiltins = []string{"http.send", "net.lookup_ip_addr"}

// Capabilities is the set of OPA built-ins (and network hosts) policies are
// compiled with. A policy that calls a built-in outside the set fails to
// load, with the built-in and the line named. The zero value and nil mean
// DefaultCapabilities. A Capabilities is immutable once made.
type Capabilities struct {
	c    *ast.Capabilities
	from string // the file it was read from, "" for the default
}

// DefaultCapabilities returns the built-ins of the OPA version toolgate is
// built with, without NetworkBuiltins, and with no network host allowed
// (json.match_schema and json.verify_schema fetch no remote $ref).
func DefaultCapabilities() *Capabilities {
	return &Capabilities{c: regoload.DefaultCapabilities(NetworkBuiltins)}
}

// LoadCapabilities reads an OPA capabilities JSON file (as `opa
// capabilities` writes it, or `opa build --capabilities` reads it), which
// replaces the default set whole: list http.send there, and the hosts in
// allow_net, to let policies reach the network.
func LoadCapabilities(path string) (*Capabilities, error) {
	c, err := regoload.LoadCapabilities(path)
	if err != nil {
		return nil, err
	}
	return &Capabilities{c: c, from: path}, nil
}

// opa returns the capabilities as OPA takes them. They must not be modified.
func (c *Capabilities) opa() *ast.Capabilities {
	if c == nil || c.c == nil {
		return DefaultCapabilities().c
	}
	return c.c
}

// String names the set for logs: the file, or "default".
func (c *Capabilities) String() string {
	if c == nil || c.from == "" {
		return "default (no network built-ins)"
	}
	return c.from
}

// WithCapabilities sets the built-ins policies may call; nil keeps
// DefaultCapabilities.
func WithCapabilities(c *Capabilities) Option {
	return func(o *options) {
		if c != nil {
			o.caps = c
		}
	}
}
