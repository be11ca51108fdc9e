package toolgate_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFrontDoorLinksNoExporter: the front door takes tracing and the
// decision log as interfaces (Options.Tracer, Options.DecisionLog), so a
// program that embeds it without them links neither package, no
// OpenTelemetry SDK or exporter, and no gRPC. The import graph is the go
// tool's own (`go list -deps`, the package without its tests).
func TestFrontDoorLinksNoExporter(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go") // go test puts its GOROOT/bin first in PATH
	require.NoError(t, err)
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps .")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/toolgate/toolgate", "the listing is the front door's")
	for _, p := range deps {
		for _, banned := range []string{
			"google.golang.org/grpc",
			"go.opentelemetry.io/otel/sdk",
			"go.opentelemetry.io/otel/exporters",
			"go.opentelemetry.io/proto",
			"github.com/toolgate/toolgate/tracing",
			"github.com/toolgate/toolgate/decisionlog",
			"github.com/prometheus/client_golang",
		} {
			require.False(t, p == banned || strings.HasPrefix(p, banned+"/"), "the front door links %s", p)
		}
	}
}
