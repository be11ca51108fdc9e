package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/upstream"
)

var upstreamKeys = []string{"name", "command", "args", "url", "import", "section", "trust_annotations", "pin", "prefix", "headers", "env", "inherit_env", "auth"}

// upstreamAuthKeys are the keys of an upstream's auth section (docs/contract.md §17).
var upstreamAuthKeys = []string{"type", "token_url", "client_id", "client_secret", "scopes", "resource", "audience"}

// LoadFile reads a config file (YAML) of serve settings. Every problem is
// reported in one *Error: an unknown key (named, with its line), a value of
// the wrong kind. Relative paths in the file (registry, policy, tokens,
// audit, a sqlite: ledger) are resolved against the file's directory.
// An empty file is no setting at all. A key under its old (camelCase)
// name is read as the new one; LoadFileWarnings also says where.
func LoadFile(path string) (*Serve, error) {
	s, _, err := LoadFileWarnings(path)
	return s, err
}

// LoadFileWarnings is LoadFile, also returning a warning for every key
// the file names by its old name: the key as written, its line, and the
// name to use.
func LoadFileWarnings(path string) (*Serve, []Problem, error) {
	data, err := fsx.ReadFile(path)
	if err != nil {
		return nil, nil, &Error{Path: path, Err: err}
	}
	s, warnings, err := parseFile(data)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Path = path
			return nil, nil, e
		}
		return nil, nil, &Error{Path: path, Err: err}
	}
	s.Config = path
	s.resolve(filepath.Dir(path))
	return s, warnings, nil
}

// parseFile decodes a config file strictly: every key is a setting of the
// table (Settings) or of a section its component defines, every value of
// the setting's kind; each problem carries its line.
func parseFile(data []byte) (*Serve, []Problem, error) {
	s := &Serve{}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return s, nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, &Error{Problems: []Problem{{Line: root.Line, Message: "want a mapping of settings"}}}
	}
	var d decoder
	d.mapping(root, s, "")
	if len(d.probs) > 0 {
		return nil, nil, &Error{Problems: d.probs}
	}
	return s, d.warnings, nil
}

// decoder collects the problems and warnings of one file.
type decoder struct {
	probs, warnings []Problem
}

func (d *decoder) bad(n *yaml.Node, key, format string, args ...any) {
	d.probs = append(d.probs, Problem{Line: n.Line, Key: key, Message: fmt.Sprintf(format, args...)})
}

// mapping reads the settings of n, the top level (prefix "") or a section
// (prefix "auth."): a key the table does not list there is an error naming
// it, a key given twice (under either name) too.
func (d *decoder) mapping(n *yaml.Node, s *Serve, prefix string) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		st, ok := fileKey(key)
		if !ok || strings.Contains(strings.TrimPrefix(st.Key, prefix), ".") {
			if prefix == "" {
				d.bad(k, "", "unknown key %q (known: %s)", k.Value, strings.Join(keysUnder(""), ", "))
			} else {
				d.bad(k, "", "unknown key %q in %s (known: %s)", k.Value, strings.TrimSuffix(prefix, "."), strings.Join(keysUnder(prefix), ", "))
			}
			continue
		}
		if seen[st.Key] {
			d.bad(k, key, "set twice")
			continue
		}
		seen[st.Key] = true
		if key == st.Old {
			d.warnings = append(d.warnings, Problem{Line: k.Line, Key: key,
				Message: fmt.Sprintf("%s is now named %s; the old name is read until the next release", key, st.Key)})
		}
		switch {
		case st.decode != nil:
			d.probs = append(d.probs, st.decode(v, s)...)
		case st.section:
			if v.Kind != yaml.MappingNode {
				d.bad(v, key, "want a mapping of %s", strings.Join(keysUnder(st.Key+"."), ", "))
				continue
			}
			d.mapping(v, s, st.Key+".")
		case !decodeValue(v, st, s):
			d.bad(v, key, "want %s", st.Want)
		}
	}
}

// fileKey finds the setting a config file key names, exactly, under its
// key or its old key.
func fileKey(key string) (Setting, bool) {
	for _, st := range settings {
		if st.Key != "" && (st.Key == key || st.Old == key) {
			return st, true
		}
	}
	return Setting{}, false
}

// decodeValue reads v into st's field of s, by the field's kind.
func decodeValue(v *yaml.Node, st Setting, s *Serve) bool {
	switch p := st.field(s).(type) {
	case *string:
		return str(v, p) && (!st.nonEmpty || *p != "")
	case *bool:
		return v.Tag == "!!bool" && v.Decode(p) == nil
	case **bool:
		var b bool
		if v.Tag != "!!bool" || v.Decode(&b) != nil {
			return false
		}
		*p = &b
		return true
	case *time.Duration:
		return duration(v, p)
	case *int:
		return v.Tag == "!!int" && v.Decode(p) == nil && *p > 0
	case *[]string:
		return strs(v, p)
	}
	panic(fmt.Sprintf("config: setting %s has a field of kind %T", st.Key, st.field(s)))
}

// upstreamsSection reads the list of upstreams: each NAME=COMMAND|URL, or
// a mapping (upstreamEntry).
func upstreamsSection(v *yaml.Node, s *Serve) []Problem {
	if v.Kind != yaml.SequenceNode {
		return []Problem{{Line: v.Line, Key: "upstreams", Message: "want a list of upstreams"}}
	}
	var probs []Problem
	for j, n := range v.Content {
		u, p := upstreamEntry(n, fmt.Sprintf("upstreams[%d]", j))
		probs = append(probs, p...)
		s.Upstreams = append(s.Upstreams, u)
	}
	return probs
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
	if s.Audit != DefaultAudit {
		abs(&s.Audit)
	}
	if s.DecisionLog != "" && !isHTTPURL(s.DecisionLog) {
		abs(&s.DecisionLog)
	}
	if k := s.DecisionLogHashKey; k != "" && !strings.HasPrefix(k, "${") {
		abs(&s.DecisionLogHashKey)
	}
	if spec, err := store.ParseStore(s.Ledger); err == nil && spec.IsFile() {
		abs(&spec.Path)
		s.Ledger = spec.String()
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
