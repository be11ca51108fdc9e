package config

import (
	"strings"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// Shadow is the candidate policy decided beside the serving one
// (docs/shadow.md): every grant and call decision is also taken by it,
// off the request path, and the differences are recorded.
type Shadow struct {
	// Policy is the candidate's policy directory; "": no shadow.
	Policy string
	// Registry is the candidate's registry file; "": the serving one.
	Registry string
	// Bundle is the URL of an OPA bundle holding the candidate's registry
	// and policies, instead of Policy and Registry: downloaded and kept
	// current as the serving bundle is (docs/shadow.md).
	Bundle string
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
			probs = append(probs, Problem{Key: "pdp_roles", Message: "a role is empty"})
		}
	}
	return probs
}
