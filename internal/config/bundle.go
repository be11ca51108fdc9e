package config

import (
	"strings"
)

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
