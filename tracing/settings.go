package tracing

import (
	"errors"
	"net/url"
)

// Settings are tracing's settings of `toolgate serve` (docs/contract.md
// §14). The zero value exports nowhere unless OTEL_EXPORTER_OTLP_ENDPOINT
// is set, and starts a trace per request.
type Settings struct {
	// Endpoint is Options.Endpoint: "" falls back to the environment.
	Endpoint string
	// TrustTraceparent is Options.TrustIncoming: spans continue the
	// client's W3C traceparent instead of linking to it.
	TrustTraceparent bool
}

// Options returns Options carrying s, for the caller to fill in the rest.
func (s Settings) Options() Options {
	return Options{Endpoint: s.Endpoint, TrustIncoming: s.TrustTraceparent}
}

// Validate reports an Endpoint that is not an http:// or https:// URL
// with a host; nil when it is, or is "".
func (s Settings) Validate() error {
	if s.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http:// or https:// URL")
	}
	return nil
}
