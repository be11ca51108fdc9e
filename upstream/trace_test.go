package upstream

import (
	"testing"

	"github.com/toolgate/toolgate/tracing"
)

// An upstream tool's method span is a client span named after the tool.
func TestMethodNamesItsUpstreamTool(t *testing.T) {
	t.Parallel()
	var m tracing.Upstream = &method{tool: "search"}
	if m.UpstreamTool() != "search" {
		t.Fatalf("UpstreamTool() = %q", m.UpstreamTool())
	}
}
