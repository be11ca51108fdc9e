// Package bundle serves toolgate's registry, policies and data from an OPA
// bundle (docs/contract.md §14): a .tar.gz from a bundle server, or the
// tar+gzip layer of an OCI artifact in a registry, polled with ETags,
// verified against a public key when signed, activated like a reload
// (docs/contract.md §9) and persisted so that a restart serves without the server.
//
// The bundle holds Rego policies, data.json, and the registry as data under
// toolgate/registry (the registry document as JSON). `opa build` makes one:
//
//	mkdir -p b/toolgate/registry
//	yq -o json registry.yaml > b/toolgate/registry/data.json
//	cp -r policies b/policies
//	opa build -b b -o bundle.tar.gz --revision "$(git rev-parse HEAD)"
//
// and `toolgate build` does the same from a registry file and a policy
// directory. OPA's own packages do the work: v1/download polls (its OCI
// downloader for an oci:// URL or type oci), v1/bundle
// reads and verifies. The bundle becomes an engine.Source (see ToSource),
// so it is parsed and compiled by the same loader and compiler
// configuration as policies read from disk.
//
// A Client is used in three steps:
//
//	c, err := bundle.New(cfg, bundle.Options{StateDir: dir, Logger: log})
//	src, err := c.Initial(ctx)      // the persisted bundle, else one download
//	eng, err := engine.New(ctx, src)
//	go c.Run(ctx, eng)              // poll, verify, activate with ReloadFrom
//
// Status reports the bundle serving and the last failure, for /healthz.
package bundle
