package inspect

import (
	"slices"
	"sort"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// LoadCallers reads a callers fixture file: identity.LoadCallers, the one
// decoder of caller files.
func LoadCallers(path string) ([]toolcall.Caller, error) { return identity.LoadCallers(path) }

// ParseCallers decodes a callers fixture document: identity.ParseCallers.
func ParseCallers(data []byte) ([]toolcall.Caller, error) { return identity.ParseCallers(data) }

// MaxRoleSetRoles is the most roles whose every combination RoleSets lists
// (2^8 = 256 combinations).
const MaxRoleSetRoles = 8

// RoleSets returns the role combinations of the roles the registry's
// sections name: see roleSets.
func RoleSets(reg *registry.Registry) (sets [][]string, capped bool) {
	return roleSets(sectionRoles(reg, nil))
}

// RoleSetsFor returns the role combinations Check tries when it is given no
// callers: those of the roles the registry's sections name and of the
// roles the policies compare a caller's roles with (engine's PolicyRoles:
// the bundled policy's contractor, which no section names).
func RoleSetsFor(rev *engine.Revision) (sets [][]string, capped bool) {
	return roleSets(sectionRoles(rev.Registry(), rev.PolicyRoles()))
}

// sectionRoles are the roles the sections name, and extra, once each.
func sectionRoles(reg *registry.Registry, extra []string) []string {
	seen := map[string]bool{}
	var roles []string
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			roles = append(roles, r)
		}
	}
	for _, s := range reg.Sections {
		for _, r := range s.Roles {
			add(r)
		}
	}
	for _, r := range extra {
		add(r)
	}
	return roles
}

// roleSets returns every subset of roles, from the empty set (signed in,
// no roles) up, each sorted. With more than MaxRoleSetRoles roles it
// returns the empty set, each role alone and all roles together, and
// capped is true.
func roleSets(roles []string) (sets [][]string, capped bool) {
	sort.Strings(roles)
	if len(roles) > MaxRoleSetRoles {
		sets = append(sets, []string{})
		for _, r := range roles {
			sets = append(sets, []string{r})
		}
		return append(sets, roles), true
	}
	for mask := range 1 << len(roles) {
		set := []string{}
		for i, r := range roles {
			if mask&(1<<i) != 0 {
				set = append(set, r)
			}
		}
		sets = append(sets, set)
	}
	// Smaller combinations first, then by name.
	slices.SortStableFunc(sets, func(a, b []string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return slices.Compare(a, b)
	})
	return sets, false
}
