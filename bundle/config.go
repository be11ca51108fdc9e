package bundle

import (
	"errors"
	"fmt"
	"net/url"
)

// Config is the bundle setting of `toolgate serve` (config key bundle,
// flags --bundle and --bundle-verification-key), named as in OPA's own
// bundle configuration. The zero value (no URL) means no bundle.
type Config struct {
	// URL is the bundle's http(s) URL on a bundle server.
	URL     string  `json:"url" yaml:"url"`
	Polling Polling `json:"polling" yaml:"polling"`
	Signing Signing `json:"signing" yaml:"signing"`
}

// Polling is how often the bundle server is asked, in seconds: a jittered
// delay between MinDelaySeconds and MaxDelaySeconds after each poll (OPA's
// default: 60 and 120). Set both or neither.
type Polling struct {
	MinDelaySeconds *int64 `json:"min_delay_seconds,omitempty" yaml:"min_delay_seconds"`
	MaxDelaySeconds *int64 `json:"max_delay_seconds,omitempty" yaml:"max_delay_seconds"`
}

// Signing is the verification of signed bundles. With a key set, a bundle
// without a valid signature (.signatures.json) is refused.
type Signing struct {
	// KeyFile is the PEM file of the public key (or the HMAC secret) that
	// bundles are signed with; "" verifies nothing.
	KeyFile string `json:"key_file,omitempty" yaml:"key_file"`
	// KeyID is the key's id as the signature names it (OPA's keyid;
	// default "default", the id `opa build --signing-key` uses).
	KeyID string `json:"keyid,omitempty" yaml:"keyid"`
	// Algorithm is the signing algorithm (default RS256).
	Algorithm string `json:"algorithm,omitempty" yaml:"algorithm"`
	// Scope, if set, must match the signature's scope claim.
	Scope string `json:"scope,omitempty" yaml:"scope"`
	// ExcludeFiles are files of the bundle not covered by the signature.
	ExcludeFiles []string `json:"exclude_files,omitempty" yaml:"exclude_files"`
}

// DefaultKeyID and DefaultAlgorithm are OPA's defaults for signed bundles.
const (
	DefaultKeyID     = "default"
	DefaultAlgorithm = "RS256"
)

// Enabled reports whether a bundle is configured.
func (c Config) Enabled() bool { return c.URL != "" }

// Validate reports every problem of c at once: a URL that is not http(s),
// polling delays set alone or out of order. The key file is read by New.
func (c Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("bundle url: want an http(s) URL of a bundle"))
	}
	p := c.Polling
	switch {
	case (p.MinDelaySeconds == nil) != (p.MaxDelaySeconds == nil):
		errs = append(errs, errors.New("bundle polling: set both min_delay_seconds and max_delay_seconds, or neither"))
	case p.MinDelaySeconds != nil && (*p.MinDelaySeconds < 1 || *p.MaxDelaySeconds < *p.MinDelaySeconds):
		errs = append(errs, errors.New("bundle polling: want 1 <= min_delay_seconds <= max_delay_seconds"))
	}
	return errors.Join(errs...)
}
