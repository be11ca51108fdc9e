// Package config holds the settings of `toolgate serve` (docs/contract.md §8): read
// from a YAML file (--config) and from flags, flags winning over the file.
//
//	s, err := config.LoadServe(os.Args[2:], os.Stderr)
//	if errors.Is(err, flag.ErrHelp) { ... }
//
// A config file holds any of the settings, under the keys of Settings
// (snake_case; docs/settings.md lists them); an unknown key is an error that
// names it and its line. A key under its old camelCase name (hookTimeout)
// is still read, for one release, with a warning:
//
//	registry: registry.yaml        # relative to this file
//	policy: rego
//	http: 127.0.0.1:8787
//	tokens: tokens.yaml
//	upstreams:
//	  - files=npx -y @modelcontextprotocol/server-filesystem /srv
//	  - { name: weather, url: "https://weather.example/mcp", import: true }   # rows in section upstream:weather
//	  - { name: search, url: "https://search.example/mcp", import: true, section: reports, trust_annotations: true }
//	ledger: sqlite:/var/lib/toolgate/ledger.db
//	ledger_retention: 24h
//	audit: "-"
//	watch: true
//	hook_timeout: 10s
//	eval_timeout: 250ms
//	auth:                          # JWT callers (docs/contract.md §12); see identity.Settings
//	  issuer: https://login.example.com/realms/acme
//	  resource: https://tools.example.com/mcp
//	  roles_claim: realm_access.roles
//	  allow_anonymous: false
package config
