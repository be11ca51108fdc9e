package engine

import (
	"slices"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// Base reports the registry's own permission default for one row (docs/contract.md §2):
// nobody gets nothing; a row without a section is granted to every signed-in
// caller; a row with a section is granted iff one of the caller's roles is
// listed for it, and a section the registry does not declare grants nobody.
func Base(reg *registry.Registry, t *registry.Tool, c *toolcall.Caller) bool {
	if c == nil {
		return false
	}
	if t.Section == "" {
		return true
	}
	sec, ok := reg.Sections[t.Section]
	if !ok {
		return false
	}
	for _, r := range c.Roles {
		if slices.Contains(sec.Roles, r) {
			return true
		}
	}
	return false
}
