// Package version says which toolgate this is: the module version, the
// commit and the versions of Go, OPA and the MCP go-sdk it was built with,
// all read from the binary's build information (runtime/debug). It is
// what `toolgate version` prints and what the server reports to MCP
// clients as serverInfo's version.
package version

import (
	"fmt"
	"io"
	"runtime/debug"
	"sync"
)

// Module paths whose versions Info reports.
const (
	OPAModule   = "github.com/open-policy-agent/opa"
	GoSDKModule = "github.com/modelcontextprotocol/go-sdk"
)

// Dev is the version of a build that has none: go test, or go build with
// -buildvcs=false outside a tagged module download.
const Dev = "dev"

// override, when set at link time (-ldflags "-X
// github.com/toolgate/toolgate/internal/version.override=v1.2.3", as the
// release build does), is the version instead of the module's.
var override string

// Info is what a binary knows of its own build. A field it does not know
// is "".
type Info struct {
	Version  string // the module version (v1.2.3, a pseudo-version) or Dev
	Commit   string // the VCS revision built
	Modified bool   // the work tree had changes
	Time     string // the commit's time, RFC 3339
	Go       string // the Go toolchain (go1.26.0)
	OPA      string // the OPA module version
	GoSDK    string // the MCP go-sdk module version
}

var (
	once sync.Once
	info Info
)

// Get is this binary's Info (read once).
func Get() Info {
	once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		info = FromBuildInfo(bi)
		if override != "" {
			info.Version = override
		}
	})
	return info
}

// FromBuildInfo is the Info of bi; nil (no build information) has only
// Version Dev.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{Version: Dev}
	if bi == nil {
		return i
	}
	i.Go = bi.GoVersion
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		i.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		case "vcs.time":
			i.Time = s.Value
		}
	}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version // "" for a directory
		}
		switch d.Path {
		case OPAModule:
			i.OPA = v
		case GoSDKModule:
			i.GoSDK = v
		}
	}
	return i
}

// Write prints i as `toolgate version` does: one "name value" line each,
// "unknown" for what the build did not record.
func (i Info) Write(w io.Writer) error {
	commit := or(i.Commit)
	if i.Commit != "" && i.Modified {
		commit += " (modified)"
	}
	if i.Time != "" {
		commit += " " + i.Time
	}
	_, err := fmt.Fprintf(w, "toolgate %s\ncommit   %s\ngo       %s\nopa      %s\ngo-sdk   %s\n",
		i.Version, commit, or(i.Go), or(i.OPA), or(i.GoSDK))
	return err
}

func or(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
