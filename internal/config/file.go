package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/upstream"
)

// serveKeys are the keys a config file may hold, in the order of docs/contract.md §8.
var serveKeys = []string{
	"registry", "policy", "stdio", "http", "as", "roles", "tokens",
	"upstreams", "ledger", "ledgerRetention", "audit", "watch", "hookTimeout", "evalTimeout",
	"sessionTimeout", "maxSessions", "readTimeout", "idleTimeout", "maxConnections",
	"allowedOrigins", "adminRole", "metricsAddr",
	"capabilities", "listFallback", "pins", "decisionLog", "otelEndpoint", "auth", "bundle",
	"idempotencyKey", "decisionLogHashKey", "trustTraceparent", "pdpRoles", "shadow",
}

// authKeys are the keys of the auth section (docs/contract.md §12).
var authKeys = []string{"issuer", "jwks", "resource", "audiences", "subject_claim", "roles_claim", "scopes_supported", "allow_anonymous"}

var upstreamKeys = []string{"name", "command", "args", "url", "import", "section", "trust_annotations", "pin", "prefix", "headers", "env", "inherit_env", "auth"}

// upstreamAuthKeys are the keys of an upstream's auth section (docs/contract.md §17).
var upstreamAuthKeys = []string{"type", "token_url", "client_id", "client_secret", "scopes", "resource", "audience"}

// LoadFile reads a config file (YAML) of serve settings. Every problem is
// reported in one *Error: an unknown key (named, with its line), a value of
// the wrong kind. Relative paths in the file (registry, policy, tokens,
// audit, a sqlite: ledger) are resolved against the file's directory.
// An empty file is no setting at all.
func LoadFile(path string) (*Serve, error) {
	data, err := fsx.ReadFile(path)
	if err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	s, err := parseFile(data)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Path = path
			return nil, e
		}
		return nil, &Error{Path: path, Err: err}
	}
	s.Config = path
	s.resolve(filepath.Dir(path))
	return s, nil
}

func parseFile(data []byte) (*Serve, error) {
	s := &Serve{}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return s, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Problems: []Problem{{Line: root.Line, Message: "want a mapping of settings"}}}
	}
	var probs []Problem
	bad := func(n *yaml.Node, key, format string, args ...any) {
		probs = append(probs, Problem{Line: n.Line, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if seen[key] {
			bad(k, key, "set twice")
			continue
		}
		seen[key] = true
		var ok bool
		switch key {
		case "registry":
			ok = str(v, &s.Registry)
		case "policy":
			ok = str(v, &s.Policy)
		case "http":
			ok = str(v, &s.HTTP)
		case "as":
			ok = str(v, &s.As)
		case "tokens":
			ok = str(v, &s.Tokens)
		case "ledger":
			ok = str(v, &s.Ledger)
		case "audit":
			ok = str(v, &s.Audit)
		case "decisionLog":
			ok = str(v, &s.DecisionLog)
		case "otelEndpoint":
			ok = str(v, &s.OtelEndpoint)
		case "decisionLogHashKey":
			ok = str(v, &s.DecisionLogHashKey)
		case "trustTraceparent":
			ok = v.Tag == "!!bool" && v.Decode(&s.TrustTraceparent) == nil
		case "approvalWebhook":
			ok = str(v, &s.ApprovalWebhook)
		case "maxPendingApprovals":
			ok = v.Tag == "!!int" && v.Decode(&s.MaxPendingApprovals) == nil && s.MaxPendingApprovals > 0
		case "stdio":
			ok = v.Tag == "!!bool" && v.Decode(&s.Stdio) == nil
		case "watch":
			var b bool
			if ok = v.Tag == "!!bool" && v.Decode(&b) == nil; ok {
				s.Watch = &b
			}
		case "capabilities":
			ok = str(v, &s.Capabilities)
		case "listFallback":
			ok = str(v, &s.ListFallback)
		case "roles":
			ok = strs(v, &s.Roles)
		case "hookTimeout":
			ok = duration(v, &s.HookTimeout)
		case "evalTimeout":
			ok = duration(v, &s.EvalTimeout)
		case "ledgerRetention":
			ok = duration(v, &s.LedgerRetention)
		case "idempotencyKey":
			ok = str(v, &s.IdempotencyKey) && s.IdempotencyKey != ""
		case "sessionTimeout":
			ok = duration(v, &s.SessionTimeout)
		case "readTimeout":
			ok = duration(v, &s.ReadTimeout)
		case "idleTimeout":
			ok = duration(v, &s.IdleTimeout)
		case "maxSessions":
			ok = v.Tag == "!!int" && v.Decode(&s.MaxSessions) == nil && s.MaxSessions > 0
		case "maxConnections":
			ok = v.Tag == "!!int" && v.Decode(&s.MaxConnections) == nil && s.MaxConnections > 0
		case "allowedOrigins":
			ok = strs(v, &s.AllowedOrigins)
		case "adminRole":
			ok = str(v, &s.AdminRole)
		case "pdpRoles":
			ok = strs(v, &s.PDPRoles)
		case "shadow":
			ok = shadowSection(v, &s.Shadow)
		case "metricsAddr":
			ok = str(v, &s.MetricsAddr)
		case "pins":
			ok = str(v, &s.Pins)
		case "auth":
			probs = append(probs, authSection(v, s)...)
			ok = true
		case "bundle":
			probs = append(probs, bundleSection(v, s)...)
			ok = true
		case "upstreams":
			if v.Kind != yaml.SequenceNode {
				bad(v, key, "want a list of upstreams")
				continue
			}
			for j, n := range v.Content {
				u, p := upstreamEntry(n, fmt.Sprintf("upstreams[%d]", j))
				probs = append(probs, p...)
				s.Upstreams = append(s.Upstreams, u)
			}
			ok = true
		default:
			bad(k, "", "unknown key %q (known: %s)", key, strings.Join(serveKeys, ", "))
			continue
		}
		if !ok {
			bad(v, key, "want %s", want[key])
		}
	}
	if len(probs) > 0 {
		return nil, &Error{Problems: probs}
	}
	return s, nil
}

var want = map[string]string{
	"registry": "a file path", "policy": "a directory path", "http": "an address such as 127.0.0.1:8787",
	"as": "a subject (string)", "tokens": "a file path", "ledger": "memory, sqlite:PATH or postgres://...",
	"audit": "a file path or -", "decisionLog": "a URL or a file path", "otelEndpoint": "an http(s) URL", "decisionLogHashKey": "${ENV_VAR} or a file path", "trustTraceparent": "true or false", "stdio": "true or false", "watch": "true or false",
	"roles": "a list of role names", "hookTimeout": "a positive duration such as 10s", "evalTimeout": "a positive duration such as 250ms",
	"ledgerRetention": "a positive duration such as 24h", "idempotencyKey": "a _meta key (a non-empty string)",
	"sessionTimeout": "a positive duration such as 10m", "readTimeout": "a positive duration such as 30s", "idleTimeout": "a positive duration such as 2m",
	"maxSessions": "a whole number, 1 or more", "maxPendingApprovals": "a whole number, 1 or more", "maxConnections": "a whole number, 1 or more", "allowedOrigins": "a list of origins",
	"adminRole": "a role name", "pdpRoles": "a list of role names", "shadow": "a mapping with policy and registry (directory and file paths) or bundle (a URL)", "metricsAddr": "an address such as 127.0.0.1:9090",
	"capabilities": "a file path", "listFallback": "base or none", "pins": "a file path",
}

func str(n *yaml.Node, dst *string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Tag == "!!map" || n.Tag == "!!seq" {
		return false
	}
	*dst = n.Value
	return true
}

func strs(n *yaml.Node, dst *[]string) bool {
	if n.Kind != yaml.SequenceNode {
		return false
	}
	out := []string{}
	for _, e := range n.Content {
		var x string
		if !str(e, &x) || x == "" {
			return false
		}
		out = append(out, x)
	}
	*dst = out
	return true
}

func duration(n *yaml.Node, dst *time.Duration) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil || d <= 0 {
		return false // zero would silently mean the default
	}
	*dst = d
	return true
}

// authSection reads the auth mapping into s.Auth and s.AllowAnonymous.
func authSection(n *yaml.Node, s *Serve) []Problem {
	var probs []Problem
	bad := func(at *yaml.Node, key, format string, args ...any) {
		probs = append(probs, Problem{Line: at.Line, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	if n.Kind != yaml.MappingNode {
		bad(n, "auth", "want a mapping of %s", strings.Join(authKeys, ", "))
		return probs
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := "auth." + k.Value
		if seen[k.Value] {
			bad(k, key, "set twice")
			continue
		}
		seen[k.Value] = true
		a := &s.Auth
		var ok bool
		var what string
		switch k.Value {
		case "issuer":
			ok, what = str(v, &a.Issuer), "a URL such as https://login.example.com/realms/acme"
		case "jwks":
			ok, what = str(v, &a.JWKS), "a file path or an https URL"
		case "resource":
			ok, what = str(v, &a.Resource), "a URI such as https://tools.example.com/mcp"
		case "audiences":
			ok, what = strs(v, &a.Audiences), "a list of audiences"
		case "subject_claim":
			ok, what = str(v, &a.SubjectClaim) && a.SubjectClaim != "", "a claim path such as sub"
		case "roles_claim":
			ok, what = str(v, &a.RolesClaim) && a.RolesClaim != "", "a claim path such as realm_access.roles"
		case "scopes_supported":
			ok, what = strs(v, &a.ScopesSupported), "a list of scopes"
		case "allow_anonymous":
			ok, what = v.Tag == "!!bool" && v.Decode(&s.AllowAnonymous) == nil, "true or false"
		default:
			bad(k, "", "unknown key %q in auth (known: %s)", k.Value, strings.Join(authKeys, ", "))
			continue
		}
		if !ok {
			bad(v, key, "want %s", what)
		}
	}
	return probs
}

// upstreamEntry reads one entry of upstreams: NAME=COMMAND|URL, or a mapping.
func upstreamEntry(n *yaml.Node, key string) (Upstream, []Problem) {
	var (
		u     Upstream
		probs []Problem
	)
	bad := func(at *yaml.Node, format string, args ...any) {
		probs = append(probs, Problem{Line: at.Line, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	switch n.Kind {
	case yaml.ScalarNode:
		var err error
		if u, err = parseUpstream(n.Value); err != nil {
			bad(n, "%v", err)
		}
		return u, probs
	case yaml.MappingNode:
	default:
		bad(n, "want NAME=COMMAND, NAME=URL or {name, command | url, import, section, trust_annotations, pin}")
		return u, probs
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ok := true
		switch k.Value {
		case "name":
			ok = str(v, &u.Name)
		case "command":
			ok = str(v, &u.Command)
		case "url":
			ok = str(v, &u.URL)
		case "args":
			ok = v.Kind == yaml.SequenceNode && v.Decode(&u.Args) == nil
		case "import":
			ok = v.Tag == "!!bool" && v.Decode(&u.Import) == nil
		case "section":
			ok = str(v, &u.Section) && u.Section != ""
		case "trust_annotations":
			ok = v.Tag == "!!bool" && v.Decode(&u.TrustAnnotations) == nil
		case "pin":
			ok = v.Tag == "!!bool" && v.Decode(&u.Pin) == nil
		case "prefix":
			var p string
			if ok = str(v, &p); ok {
				u.Prefix = &p
			}
		case "headers":
			ok = strMap(v, &u.Headers)
		case "env":
			ok = strMap(v, &u.Env)
		case "inherit_env":
			ok = v.Tag == "!!bool" && v.Decode(&u.InheritEnv) == nil
		case "auth":
			var p []Problem
			u.Auth, p = upstreamAuth(v, key)
			probs = append(probs, p...)
		default:
			bad(k, "unknown key %q (known: %s)", k.Value, strings.Join(upstreamKeys, ", "))
			continue
		}
		if !ok {
			bad(v, "%s: wrong kind of value", k.Value)
		}
	}
	return u, probs
}

// resolve makes the file's relative paths relative to dir.
func (s *Serve) resolve(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&s.Registry)
	abs(&s.Policy)
	abs(&s.Tokens)
	abs(&s.Capabilities)
	abs(&s.Pins)
	abs(&s.Shadow.Policy)
	abs(&s.Shadow.Registry)
	abs(&s.Bundle.Signing.KeyFile)
	abs(&s.Bundle.Credentials.Bearer.TokenPath)
	if s.Auth.JWKS != "" && !isHTTPURL(s.Auth.JWKS) {
		abs(&s.Auth.JWKS)
	}
	if s.Audit != "-" {
		abs(&s.Audit)
	}
	if s.DecisionLog != "" && !isHTTPURL(s.DecisionLog) {
		abs(&s.DecisionLog)
	}
	if k := s.DecisionLogHashKey; k != "" && !strings.HasPrefix(k, "${") {
		abs(&s.DecisionLogHashKey)
	}
	if p, ok := strings.CutPrefix(s.Ledger, "sqlite:"); ok && p != "" && p != ":memory:" && !strings.HasPrefix(p, "file:") {
		abs(&p)
		s.Ledger = "sqlite:" + p
	}
}

// strMap reads a mapping of names to string values (headers, env); a
// name given twice is refused.
func strMap(n *yaml.Node, dst *map[string]string) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var val string
		if k.Kind != yaml.ScalarNode || k.Value == "" || !str(v, &val) {
			return false
		}
		if _, dup := out[k.Value]; dup {
			return false
		}
		out[k.Value] = val
	}
	*dst = out
	return true
}

// upstreamAuth reads an upstream's auth mapping (docs/contract.md §17);
// what its values mean is checked by Validate (upstream.CredentialProblems).
func upstreamAuth(n *yaml.Node, key string) (*upstream.Auth, []Problem) {
	var probs []Problem
	bad := func(at *yaml.Node, format string, args ...any) {
		probs = append(probs, Problem{Line: at.Line, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	if n.Kind != yaml.MappingNode {
		bad(n, "auth: want a mapping of %s", strings.Join(upstreamAuthKeys, ", "))
		return nil, probs
	}
	a := &upstream.Auth{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			bad(k, "auth.%s: set twice", k.Value)
			continue
		}
		seen[k.Value] = true
		var ok bool
		switch k.Value {
		case "type":
			ok = str(v, &a.Type)
		case "token_url":
			ok = str(v, &a.TokenURL)
		case "client_id":
			ok = str(v, &a.ClientID)
		case "client_secret":
			ok = str(v, &a.ClientSecret)
		case "scopes":
			ok = strs(v, &a.Scopes)
		case "resource":
			ok = str(v, &a.Resource)
		case "audience":
			ok = str(v, &a.Audience)
		default:
			bad(k, "unknown key %q in auth (known: %s)", k.Value, strings.Join(upstreamAuthKeys, ", "))
			continue
		}
		if !ok {
			bad(v, "auth.%s: wrong kind of value", k.Value)
		}
	}
	return a, probs
}
