package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// The keys of the bundle section (docs/contract.md §14), named as in OPA's bundle
// configuration.
var (
	bundleKeys      = []string{"url", "type", "credentials", "polling", "signing", "refuse_older_revisions"}
	credentialsKeys = []string{"bearer"}
	bearerKeys      = []string{"token_path", "scheme"}
	pollingKeys     = []string{"min_delay_seconds", "max_delay_seconds"}
	signingKeys     = []string{"key_file", "keyid", "algorithm", "scope", "exclude_files"}
)

// bundleSection reads the bundle mapping into s.Bundle.
func bundleSection(n *yaml.Node, s *Serve) []Problem {
	var probs []Problem
	bad := func(at *yaml.Node, key, format string, args ...any) {
		probs = append(probs, Problem{Line: at.Line, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	// mapping calls f for each key of n, a mapping of the known keys.
	mapping := func(n *yaml.Node, prefix string, known []string, f func(k, v *yaml.Node, key string) (bool, string)) {
		if n.Kind != yaml.MappingNode {
			bad(n, prefix, "want a mapping of %s", strings.Join(known, ", "))
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := prefix + "." + k.Value
			switch {
			case seen[k.Value]:
				bad(k, key, "set twice")
				continue
			case !contains(known, k.Value):
				bad(k, "", "unknown key %q in %s (known: %s)", k.Value, prefix, strings.Join(known, ", "))
				continue
			}
			seen[k.Value] = true
			if ok, what := f(k, v, key); !ok {
				bad(v, key, "want %s", what)
			}
		}
	}
	seconds := func(v *yaml.Node, dst **int64) (bool, string) {
		var n int64
		if v.Tag != "!!int" || v.Decode(&n) != nil || n < 1 {
			return false, "a whole number of seconds, 1 or more"
		}
		*dst = &n
		return true, ""
	}
	b := &s.Bundle
	mapping(n, "bundle", bundleKeys, func(_, v *yaml.Node, key string) (bool, string) {
		switch key {
		case "bundle.url":
			return str(v, &b.URL), "an http(s) URL of a bundle, or oci://REGISTRY/REPOSITORY:TAG"
		case "bundle.type":
			if v.Kind != yaml.ScalarNode || v.Value != bundle.TypeHTTP && v.Value != bundle.TypeOCI {
				return false, fmt.Sprintf("%q (a bundle server) or %q (an OCI registry)", bundle.TypeHTTP, bundle.TypeOCI)
			}
			b.Type = v.Value
		case "bundle.refuse_older_revisions":
			return v.Tag == "!!bool" && v.Decode(&b.RefuseOlderRevisions) == nil, "true or false"
		case "bundle.credentials":
			mapping(v, key, credentialsKeys, func(_, v *yaml.Node, key string) (bool, string) {
				mapping(v, key, bearerKeys, func(k, v *yaml.Node, _ string) (bool, string) {
					if k.Value == "token_path" {
						return str(v, &b.Credentials.Bearer.TokenPath), "a file path (the token)"
					}
					return str(v, &b.Credentials.Bearer.Scheme), "an authorization scheme such as Bearer"
				})
				return true, ""
			})
		case "bundle.polling":
			mapping(v, key, pollingKeys, func(k, v *yaml.Node, _ string) (bool, string) {
				if k.Value == "min_delay_seconds" {
					return seconds(v, &b.Polling.MinDelaySeconds)
				}
				return seconds(v, &b.Polling.MaxDelaySeconds)
			})
		case "bundle.signing":
			mapping(v, key, signingKeys, func(k, v *yaml.Node, _ string) (bool, string) {
				g := &b.Signing
				switch k.Value {
				case "key_file":
					return str(v, &g.KeyFile), "a file path (PEM public key)"
				case "keyid":
					return str(v, &g.KeyID), "a key id"
				case "algorithm":
					return str(v, &g.Algorithm), "an algorithm such as RS256"
				case "scope":
					return str(v, &g.Scope), "a scope"
				}
				return strs(v, &g.ExcludeFiles), "a list of file names"
			})
		}
		return true, ""
	})
	return probs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// bundleProblems validates the bundle settings.
func (s *Serve) bundleProblems() []Problem {
	b := s.Bundle
	if !b.Enabled() {
		if b.Signing.KeyFile != "" {
			return []Problem{{Key: "bundle.signing.key_file", Message: "needs bundle.url (--bundle)"}}
		}
		if b.Credentials.Bearer.TokenPath != "" {
			return []Problem{{Key: "bundle.credentials.bearer.token_path", Message: "needs bundle.url (--bundle)"}}
		}
		return nil
	}
	var probs []Problem
	if s.Registry != "" || s.Policy != "" {
		probs = append(probs, Problem{Key: "bundle", Message: "the bundle holds registry and policies: give bundle.url (--bundle) or registry and policy, not both"})
	}
	if err := b.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			probs = append(probs, Problem{Key: "bundle", Message: line})
		}
	}
	return probs
}
