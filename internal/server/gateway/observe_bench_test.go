package gateway_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/server/gateway"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/tracing"
)

// BenchmarkGovernedCallObserve measures one governed tools/call (add, the
// bundled example, a go-sdk session over streamable HTTP on loopback) with
// tracing and decision logs off (the default), with tracing on (OTLP/HTTP
// to a loopback receiver that discards), and with both on, side by side in
// one run. Off must stay within 5% of a build without them
// (BenchmarkGovernedCallAuth/tokens-file on main measures the same call).
//
//	go test -run '^$' -bench GovernedCallObserve -benchmem -count 5 ./internal/server/gateway
func BenchmarkGovernedCallObserve(b *testing.B) {
	dir := b.TempDir()
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer sink.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ops := &toolcall.Caller{Subject: "ops", Roles: []string{"manager", "reader"}}
	tokens := writeTokens(b, dir, ops)
	for _, c := range []struct {
		name        string
		otel, dlogs string
	}{
		{"off", "", ""},
		{"tracing", sink.URL, ""},
		{"tracing+decision-log", sink.URL, sink.URL},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			g := startGateway(b, gateway.Config{Logger: quiet, Serve: config.Serve{Tokens: tokens, Ledger: "memory",
				Audit: filepath.Join(b.TempDir(), "audit.jsonl"), Tracing: tracing.Settings{Endpoint: c.otel}, DecisionLog: decisionlog.Settings{Target: c.dlogs}}})
			defer g.stop()
			benchAdd(b, g.url, tokenFor(ops))
		})
	}
}
