package inspect

import (
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
)

// MethodFindings reports the rows of reg whose method ms does not have and
// the declared arguments a method does not take, as Check reports them
// (rows whose method is upstream:SERVER/TOOL are skipped); file names the
// registry in each finding. `toolgate serve` logs them at start and on
// every reload, so serve and check agree on what will not work.
func MethodFindings(reg *registry.Registry, ms methods.Set, file string) []Finding {
	var r CheckReport
	checkMethods(reg, ms, file, &r)
	return r.Errors
}
