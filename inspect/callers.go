package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/registry"
)

// LoadCallers reads a callers fixture file: a YAML or JSON list of
// {subject, roles, claims}, as `toolgate check --callers FILE` takes it.
func LoadCallers(path string) ([]engine.Caller, error) {
	data, err := fsx.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("callers: %w", err)
	}
	cs, err := ParseCallers(data)
	if err != nil {
		return nil, fmt.Errorf("callers %s: %w", path, err)
	}
	return cs, nil
}

// ParseCallers decodes a callers fixture document (YAML, or JSON, which is
// YAML). Every entry needs a non-empty subject; roles and claims may be
// left out; any other key is refused, so a misspelt "role" is not silently
// a caller without roles.
func ParseCallers(data []byte) ([]engine.Caller, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, errors.New("no callers")
	}
	// Through JSON, so the decoding rules are engine.Caller's own.
	enc, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(enc))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var cs []engine.Caller
	if err := dec.Decode(&cs); err != nil {
		return nil, fmt.Errorf("want a list of {subject, roles, claims}: %w", err)
	}
	for i, c := range cs {
		if c.Subject == "" {
			return nil, fmt.Errorf("[%d]: subject is required", i)
		}
		if cs[i].Claims == nil {
			cs[i].Claims = map[string]any{}
		}
	}
	return cs, nil
}

// MaxRoleSetRoles is the most roles whose every combination RoleSets lists
// (2^8 = 256 combinations).
const MaxRoleSetRoles = 8

// RoleSets returns the role combinations Check tries when it is given no
// callers: every subset of the roles the registry's sections name, from the
// empty set (signed in, no roles) up, each sorted. With more than
// MaxRoleSetRoles roles it returns the empty set, each role alone and all
// roles together, and capped is true.
func RoleSets(reg *registry.Registry) (sets [][]string, capped bool) {
	seen := map[string]bool{}
	var roles []string
	for _, s := range reg.Sections {
		for _, r := range s.Roles {
			if !seen[r] {
				seen[r] = true
				roles = append(roles, r)
			}
		}
	}
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
