package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/internal/suggest"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/upstream"
)

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
	d.mapping(root, top(s), "")
	if len(d.probs) > 0 {
		return nil, nil, &Error{Problems: d.probs}
	}
	return s, d.warnings, nil
}

// decoder collects the problems and warnings of one file.
type decoder struct {
	probs, warnings []Problem
}

// scope is what a mapping is read into: the top level of the file and its
// sections (a Serve), or one entry of a list of mappings (an upstream)
// and its sections.
type scope struct {
	// entry names the entry in its problems ("upstreams[0]"); "" at the top.
	entry string
	// root is the key prefix of the entry's settings ("upstreams."); "" at
	// the top.
	root string
	// at is the value st sets.
	at func(st Setting) any
	// serve is what the list of upstreams is read into; nil in an entry.
	serve *Serve
}

// top is the scope of the file's top level.
func top(s *Serve) scope {
	return scope{at: func(st Setting) any { return st.field(s) }, serve: s}
}

// bad records a problem at n about key (a setting's full key, or "" for
// the mapping). Inside an entry, the problem is the entry's and its message
// starts with the key as the entry names it (auth.type: ...).
func (d *decoder) bad(sc scope, n *yaml.Node, key, format string, args ...any) {
	d.probs = append(d.probs, sc.problem(n, key, fmt.Sprintf(format, args...)))
}

func (sc scope) problem(n *yaml.Node, key, msg string) Problem {
	if sc.entry == "" {
		return Problem{Line: n.Line, Key: key, Message: msg}
	}
	if key != "" {
		msg = strings.TrimPrefix(key, sc.root) + ": " + msg
	}
	return Problem{Line: n.Line, Key: sc.entry, Message: msg}
}

// wrongKind is the message of a value of the wrong kind for st.
func (sc scope) wrongKind(st Setting) string {
	if sc.entry != "" {
		return "wrong kind of value"
	}
	return "want " + st.Want
}

// mapping reads the settings of n, the scope's root (prefix sc.root) or a
// section (prefix "auth."): a key the table does not list there is an
// error naming it, a key given twice (under either name) too, except
// among an entry's own keys, where the last one is read.
func (d *decoder) mapping(n *yaml.Node, sc scope, prefix string) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		st, ok := fileKey(key)
		if !ok || strings.Contains(strings.TrimPrefix(st.Key, prefix), ".") {
			keys := keysUnder(prefix)
			known := "known: " + strings.Join(keys, ", ")
			if hint := suggest.Closest(k.Value, keys); hint != "" {
				known = fmt.Sprintf("did you mean %q? %s", hint, known)
			}
			if prefix == sc.root {
				d.bad(sc, k, "", "unknown key %q (%s)", k.Value, known)
			} else {
				d.bad(sc, k, "", "unknown key %q in %s (%s)", k.Value, strings.TrimSuffix(strings.TrimPrefix(prefix, sc.root), "."), known)
			}
			continue
		}
		if seen[st.Key] {
			d.bad(sc, k, key, "set twice")
			continue
		}
		seen[st.Key] = sc.entry == "" || prefix != sc.root
		if key == st.Old {
			d.warnings = append(d.warnings, sc.problem(k, key,
				fmt.Sprintf("%s is now named %s; the old name is read until the next release", key, st.Key)))
		}
		switch {
		case st.list:
			d.upstreams(v, sc.serve)
		case st.section:
			if v.Kind != yaml.MappingNode {
				d.bad(sc, v, key, "want a mapping of %s", strings.Join(keysUnder(st.Key+"."), ", "))
				continue
			}
			if st.field != nil || st.entry != nil {
				sc.at(st) // the section's value exists once the file names it
			}
			d.mapping(v, sc, st.Key+".")
		case !decodeValue(v, st, sc.at(st)):
			d.bad(sc, v, key, "%s", sc.wrongKind(st))
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

// decodeValue reads v into p, st's value, by p's kind.
func decodeValue(v *yaml.Node, st Setting, p any) bool {
	switch p := p.(type) {
	case *string:
		return str(v, p) && (!st.nonEmpty || *p != "") && (st.oneOf == nil || slices.Contains(st.oneOf, *p))
	case **string:
		var x string
		if !str(v, &x) {
			return false
		}
		*p = &x
		return true
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
	case **int64:
		var n int64
		if v.Tag != "!!int" || v.Decode(&n) != nil || n < 1 {
			return false
		}
		*p = &n
		return true
	case *[]string:
		if st.loose {
			return v.Kind == yaml.SequenceNode && v.Decode(p) == nil
		}
		return strs(v, p)
	case *map[string]string:
		return strMap(v, p)
	case *map[string][]string:
		return strsMap(v, p)
	}
	panic(fmt.Sprintf("config: setting %s has a value of kind %T", st.Key, p))
}

// upstreams reads the list of upstreams: each NAME=COMMAND|URL, or a
// mapping of the upstreams.* settings.
func (d *decoder) upstreams(v *yaml.Node, s *Serve) {
	if v.Kind != yaml.SequenceNode {
		d.bad(top(s), v, "upstreams", "want a list of upstreams")
		return
	}
	for j, n := range v.Content {
		var u upstream.Settings
		sc := scope{entry: fmt.Sprintf("upstreams[%d]", j), root: "upstreams.", at: func(st Setting) any { return st.entry(&u) }}
		switch n.Kind {
		case yaml.ScalarNode:
			var err error
			if u, err = upstream.ParseSettings(n.Value); err != nil {
				d.bad(sc, n, "", "%v", err)
			}
		case yaml.MappingNode:
			d.mapping(n, sc, sc.root)
		default:
			d.bad(sc, n, "", "want NAME=COMMAND, NAME=URL or {name, command | url, import, section, trust_annotations, pin}")
		}
		s.Upstreams = append(s.Upstreams, u)
	}
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
	if s.DecisionLog.Target != "" && !decisionlog.IsURL(s.DecisionLog.Target) {
		abs(&s.DecisionLog.Target)
	}
	if k := s.DecisionLog.HashKey; k != "" && !strings.HasPrefix(k, "${") {
		abs(&s.DecisionLog.HashKey)
	}
	if spec, err := store.ParseStore(s.Ledger); err == nil && spec.IsFile() {
		abs(&spec.Path)
		s.Ledger = spec.String()
	}
}

// strsMap reads a mapping of names to lists of names (an upstream's
// remember); a name given twice is refused.
func strsMap(n *yaml.Node, dst *map[string][]string) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	out := map[string][]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var names []string
		if k.Kind != yaml.ScalarNode || k.Value == "" || !strs(v, &names) {
			return false
		}
		if _, dup := out[k.Value]; dup {
			return false
		}
		out[k.Value] = names
	}
	*dst = out
	return true
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
