// Package toolgate governs the tools of an MCP (Model Context Protocol)
// server with Rego policies: tools/list decides what a caller can see,
// tools/call decides what a caller can do, and the two are one decision.
//
// This package is the front door: New returns a governed Server from a
// registry, a policy directory and the Go methods rows dispatch to;
// Serve serves it over any transport (always through the wire layer),
// Handler over streamable HTTP; Reload (or Options.Watch) serves a new
// revision and tells the sessions whose listing changed; Close flushes the
// audit trail.
//
//	srv, err := toolgate.New(ctx, toolgate.Options{
//		Registry: "registry.yaml", Policies: "rego",
//		Methods:  methods, // methods.Map
//		Caller:   caller,  // who is calling: mcpadapter.CallerFunc
//		Audit:    os.Stderr,
//		Watch:    true,
//	})
//	if err != nil { ... }
//	defer srv.Close()
//	err = srv.Serve(ctx, &mcp.StdioTransport{})
//
// New is the one assembly of a governed server: the toolgate binary
// (cmd/toolgate) builds its server through it too, and adds its hardened
// HTTP server, identity and upstreams. Tracing and decision logs are
// options taken as interfaces (Tracer, DecisionLog), so a program that
// uses neither links no OpenTelemetry exporter and no gRPC.
//
// The expert layers are public: engine (decisions, reload) and mcpadapter
// (the tools/list and tools/call pipeline, hooks); the hooks are under
// hooks/.
//
// The package also carries the bundled example: a registry of the demo
// methods and the policies that govern it, served when no registry or
// policy directory is given.
//
//	reg, _ := fs.ReadFile(toolgate.Bundled, toolgate.BundledRegistryPath)
//	policies, _ := fs.Sub(toolgate.Bundled, toolgate.BundledPolicyDir)
package toolgate

import (
	"embed"
	"io/fs"
	"path"
	"sync"
	"testing/fstest"

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

// BundledLabel starts the paths under which LabelledSource reads the
// bundled example: a report that names a file of it ("(bundled)
// rego/grant.rego:19") says it is the copy built into the binary, not a
// file of the working directory.
const BundledLabel = "(bundled) "

// LabelledSource is Source for the commands that report file names
// (toolgate check and explain): each part that is "" is the bundled
// example's, read under paths that start with BundledLabel.
func LabelledSource(registry, policy string) engine.Source {
	src := engine.Source{Registry: registry, Policies: policy}
	if registry == "" {
		src.RegistryFS, src.Registry = labelledBundled(), BundledLabel+BundledRegistryPath
	}
	if policy == "" {
		src.PolicyFS, src.Policies = labelledBundled(), BundledLabel+BundledPolicyDir
	}
	return src
}

// labelledBundled is Bundled with each top-level directory renamed
// BundledLabel+name.
var labelledBundled = sync.OnceValue(func() fs.FS {
	m := fstest.MapFS{}
	err := fs.WalkDir(Bundled, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Bundled, p)
		if err != nil {
			return err
		}
		m[path.Clean(BundledLabel+p)] = &fstest.MapFile{Data: b, Mode: 0o444}
		return nil
	})
	if err != nil {
		panic("toolgate: bundled example unreadable: " + err.Error()) // a build mistake
	}
	return m
})
