package config

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// Shadow is the candidate policy decided beside the serving one
// (docs/shadow.md): every grant and call decision is also taken by it,
// off the request path, and the differences are recorded.
type Shadow struct {
	// Policy is the candidate's policy directory; "": no shadow.
	Policy string `yaml:"policy"`
	// Registry is the candidate's registry file; "": the serving one.
	Registry string `yaml:"registry"`
	// Bundle is the URL of an OPA bundle holding the candidate's registry
	// and policies, instead of Policy and Registry: downloaded and kept
	// current as the serving bundle is (docs/shadow.md).
	Bundle string `yaml:"bundle"`
}

// Enabled reports whether a candidate is configured.
func (s Shadow) Enabled() bool { return s.Policy != "" || s.Bundle != "" }

// problems are the shadow settings that cannot be served with s.
func (sh Shadow) problems(s *Serve) []Problem {
	var probs []Problem
	switch {
	case sh.Bundle != "" && (sh.Policy != "" || sh.Registry != ""):
		probs = append(probs, Problem{Key: "shadow", Message: "the candidate bundle holds registry and policies: give shadow.bundle (shadow-bundle) or shadow.policy and shadow.registry, not both"})
	case sh.Registry != "" && sh.Policy == "":
		probs = append(probs, Problem{Key: "shadow", Message: "a candidate registry (shadow-registry) is given without a candidate policy (shadow-policy)"})
	}
	if sh.Bundle != "" {
		if err := (bundle.Config{URL: sh.Bundle}).Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				probs = append(probs, Problem{Key: "shadow.bundle", Message: line})
			}
		}
	}
	if sh.Policy != "" && sh.Registry == "" && s.Bundle.Enabled() {
		probs = append(probs, Problem{Key: "shadow", Message: "serving a bundle, the candidate needs its registry: give shadow-registry"})
	}
	for _, r := range s.PDPRoles {
		if r == "" {
			probs = append(probs, Problem{Key: "pdpRoles", Message: "a role is empty"})
		}
	}
	return probs
}

// shadowSection decodes the config file's shadow mapping.
func shadowSection(n *yaml.Node, dst *Shadow) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	var out Shadow
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "policy":
			if !str(v, &out.Policy) {
				return false
			}
		case "registry":
			if !str(v, &out.Registry) {
				return false
			}
		case "bundle":
			if !str(v, &out.Bundle) {
				return false
			}
		default:
			return false
		}
	}
	*dst = out
	return true
}
