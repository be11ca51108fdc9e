package toolgate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/depstest"
)

// TestFrontDoorLinksNoExporter: the front door takes tracing and the
// decision log as interfaces (Options.Tracer, Options.DecisionLog), so a
// program that embeds it without them links neither package, no
// OpenTelemetry SDK or exporter, and no gRPC.
func TestFrontDoorLinksNoExporter(t *testing.T) {
	t.Parallel()
	deps := depstest.Deps(t)
	require.Contains(t, deps, "github.com/toolgate/toolgate", "the listing is the front door's")
	depstest.RefusePrefixes(t, deps, "the front door",
		"google.golang.org/grpc",
		"go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/otel/exporters",
		"go.opentelemetry.io/proto",
		"github.com/toolgate/toolgate/tracing",
		"github.com/toolgate/toolgate/decisionlog",
		"github.com/prometheus/client_golang",
	)
}

// TestUpstreamLinksNoAdapter: the upstream pool implements the adapter's
// Peer-facing and catalog interfaces from the leaf both import, so the
// MCP client side never links the governed server.
func TestUpstreamLinksNoAdapter(t *testing.T) {
	t.Parallel()
	deps := depstest.DepsOf(t, "./upstream")
	require.Contains(t, deps, "github.com/toolgate/toolgate/upstream", "the listing is upstream's")
	depstest.RefusePrefixes(t, deps, "upstream", "github.com/toolgate/toolgate/mcpadapter")
}
