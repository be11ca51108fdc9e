package servesettings

import (
	"strings"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// Shadow are the candidate policy decided beside the serving one
// (docs/shadow.md): every grant and call decision is also taken by it,
// off the request path, and the differences are recorded. The zero value
// is no candidate.
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

// ShadowProblem is one thing wrong with Shadow: the key it is about
// (shadow, shadow.bundle) and what is wrong with it.
type ShadowProblem struct {
	Key     string
	Message string
}

// Problems are what is wrong with s alone, in the order they are found;
// none when s can be served. What depends on the serving settings (a
// serving bundle) is the caller's to check.
func (s Shadow) Problems() []ShadowProblem {
	var probs []ShadowProblem
	switch {
	case s.Bundle != "" && (s.Policy != "" || s.Registry != ""):
		probs = append(probs, ShadowProblem{Key: "shadow", Message: "the candidate bundle holds registry and policies: give shadow.bundle (shadow-bundle) or shadow.policy and shadow.registry, not both"})
	case s.Registry != "" && s.Policy == "":
		probs = append(probs, ShadowProblem{Key: "shadow", Message: "a candidate registry (shadow-registry) is given without a candidate policy (shadow-policy)"})
	}
	if s.Bundle != "" {
		if err := (bundle.Config{URL: s.Bundle}).Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				probs = append(probs, ShadowProblem{Key: "shadow.bundle", Message: line})
			}
		}
	}
	return probs
}
