package gateway_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/shadow"
)

// BenchmarkStdioCallShadow measures one tools/call of echo over stdio as
// BenchmarkStdioCallDefaults does (1 000 rows, the bundled policies, the
// ledger in memory), without and with a shadow candidate (the same
// policies): the candidate decides off the request path, so the two
// should differ by noise only.
//
//	go test -run '^$' -bench StdioCallShadow -benchmem -count 6 ./internal/server/gateway
func BenchmarkStdioCallShadow(b *testing.B) {
	for _, withShadow := range []bool{false, true} {
		name := "serving"
		if withShadow {
			name = "shadow"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			writeBenchSource(b, dir, 1000)
			off := false
			s := config.Serve{Registry: filepath.Join(dir, "registry.yaml"), Policy: filepath.Join(dir, "policies"), Ledger: "memory",
				Stdio: true, As: "cid", Roles: []string{"manager", "contractor"}, Watch: &off}
			if withShadow {
				s.Shadow = shadow.Settings{Policy: filepath.Join(dir, "policies")}
			}
			require.NoError(b, s.SetDefaults())
			benchStdio(b, serveStdio(s))
		})
	}
}
