package config

// shadowProblems: the candidate's own (servesettings.Shadow.Problems), what it
// lacks beside a serving bundle, and the AuthZEN roles.
func (s *Serve) shadowProblems() []Problem {
	var probs []Problem
	for _, p := range s.Shadow.Problems() {
		probs = append(probs, Problem{Key: p.Key, Message: p.Message})
	}
	if sh := s.Shadow; sh.Policy != "" && sh.Registry == "" && s.Bundle.Enabled() {
		probs = append(probs, Problem{Key: "shadow", Message: "serving a bundle, the candidate needs its registry: give shadow-registry"})
	}
	for _, r := range s.PDPRoles {
		if r == "" {
			probs = append(probs, Problem{Key: "pdp_roles", Message: "a role is empty"})
		}
	}
	return probs
}
