package shadow

import (
	"strings"

	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// Settings are the candidate policy decided beside the serving one
// (docs/shadow.md): every grant and call decision is also taken by it,
// off the request path, and the differences are recorded. The zero value
// is no candidate.
type Settings struct {
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
func (s Settings) Enabled() bool { return s.Policy != "" || s.Bundle != "" }

// SettingProblem is one thing wrong with Settings: the key it is about
// (shadow, shadow.bundle) and what is wrong with it.
type SettingProblem struct {
	Key     string
	Message string
}

// Problems are what is wrong with s alone, in the order they are found;
// none when s can be served. What depends on the serving settings (a
// serving bundle) is the caller's to check.
func (s Settings) Problems() []SettingProblem {
	var probs []SettingProblem
	switch {
	case s.Bundle != "" && (s.Policy != "" || s.Registry != ""):
		probs = append(probs, SettingProblem{Key: "shadow", Message: "the candidate bundle holds registry and policies: give shadow.bundle (shadow-bundle) or shadow.policy and shadow.registry, not both"})
	case s.Registry != "" && s.Policy == "":
		probs = append(probs, SettingProblem{Key: "shadow", Message: "a candidate registry (shadow-registry) is given without a candidate policy (shadow-policy)"})
	}
	if s.Bundle != "" {
		if err := (bundle.Config{URL: s.Bundle}).Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				probs = append(probs, SettingProblem{Key: "shadow.bundle", Message: line})
			}
		}
	}
	return probs
}
