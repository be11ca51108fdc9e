package version_test

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/version"
)

func TestFromBuildInfo(t *testing.T) {
	bi, err := debug.ParseBuildInfo(strings.Join([]string{
		"path\tgithub.com/toolgate/toolgate/cmd/toolgate",
		"mod\tgithub.com/toolgate/toolgate\tv1.2.3\th1:abc=",
		"dep\tgithub.com/modelcontextprotocol/go-sdk\tv1.8.0\th1:def=",
		"dep\tgithub.com/open-policy-agent/opa\tv1.22.3\t",
		"=>\tgithub.com/example/opa-fork\tv1.22.4\th1:ghi=",
		"build\tvcs.revision=0123abcd",
		"build\tvcs.modified=true",
		"build\tvcs.time=2026-12-02T05:00:00Z",
		"",
	}, "\n"))
	require.NoError(t, err)
	bi.GoVersion = "go1.26.0" // the binary's header, not the text ParseBuildInfo reads
	got := version.FromBuildInfo(bi)
	require.Equal(t, version.Info{Version: "v1.2.3", Commit: "0123abcd", Modified: true, Time: "2026-12-02T05:00:00Z",
		Go: "go1.26.0", OPA: "v1.22.4", GoSDK: "v1.8.0"}, got, "a replaced module reports its replacement")
	var b strings.Builder
	require.NoError(t, got.Write(&b))
	require.Equal(t, "toolgate v1.2.3\ncommit   0123abcd (modified) 2026-12-02T05:00:00Z\ngo       go1.26.0\nopa      v1.22.4\ngo-sdk   v1.8.0\n", b.String())
}

func TestFromBuildInfoDevel(t *testing.T) {
	require.Equal(t, version.Info{Version: version.Dev}, version.FromBuildInfo(nil))
	bi, err := debug.ParseBuildInfo("mod\tgithub.com/toolgate/toolgate\t(devel)\t\n")
	require.NoError(t, err)
	bi.GoVersion = "go1.26.0"
	got := version.FromBuildInfo(bi)
	require.Equal(t, version.Info{Version: version.Dev, Go: "go1.26.0"}, got)
	var b strings.Builder
	require.NoError(t, got.Write(&b))
	require.Equal(t, "toolgate dev\ncommit   unknown\ngo       go1.26.0\nopa      unknown\ngo-sdk   unknown\n", b.String())
}
