// Package toolgate governs the tools of an MCP (Model Context Protocol)
// server with Rego policies: tools/list decides what a caller can see,
// tools/call decides what a caller can do, and the two are one decision.
//
// The work lives in sub-packages (registry, engine, mcpadapter, policytest)
// and the toolgate binary under cmd/toolgate. This root package only carries
// the bundled example: a registry of the demo methods and the policies that
// govern it, served by `toolgate serve` when no registry or policy directory
// is given.
//
//	reg, _ := fs.ReadFile(toolgate.Bundled, toolgate.BundledRegistryPath)
//	policies, _ := fs.Sub(toolgate.Bundled, toolgate.BundledPolicyDir)
package toolgate

import (
	"embed"
	"io/fs"

	"github.com/toolgate/toolgate/engine"
)

// Paths of the bundled example inside [Bundled].
const (
	BundledRegistryPath = "example/registry.yaml"
	BundledPolicyDir    = "rego"
)

// Bundled holds the bundled example: example/registry.yaml and the policies
// in rego/. It is read-only and safe for concurrent use.
//
//go:embed example rego
var Bundled embed.FS

// ExampleRegistry returns the bundled registry document (YAML).
func ExampleRegistry() []byte {
	b, err := fs.ReadFile(Bundled, BundledRegistryPath)
	if err != nil {
		panic("toolgate: bundled registry missing: " + err.Error()) // a build mistake
	}
	return b
}

// ExamplePolicies returns the bundled policy directory as a file system
// rooted at it (grant.rego, call.rego).
func ExamplePolicies() fs.FS {
	sub, err := fs.Sub(Bundled, BundledPolicyDir)
	if err != nil {
		panic("toolgate: bundled policies missing: " + err.Error()) // a build mistake
	}
	return sub
}

// Source returns the engine source of a registry file and a policy
// directory on disk; each that is "" is the bundled example's, as every
// toolgate command defaults them.
func Source(registry, policy string) engine.Source {
	src := engine.Source{Registry: registry, Policies: policy}
	if registry == "" {
		src.RegistryFS, src.Registry = Bundled, BundledRegistryPath
	}
	if policy == "" {
		src.PolicyFS, src.Policies = Bundled, BundledPolicyDir
	}
	return src
}
