package bundle

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"oras.land/oras-go/v2/registry"
)

// Config is the bundle setting of `toolgate serve` (config key bundle,
// flags --bundle and --bundle-verification-key), named as in OPA's own
// bundle configuration. The zero value (no URL) means no bundle.
type Config struct {
	// URL is the bundle's http(s) URL on a bundle server, or its OCI
	// reference as oci://REGISTRY/REPOSITORY:TAG (or @DIGEST), pulled
	// over HTTPS. With Type "oci", an http(s) URL
	// (http://REGISTRY/REPOSITORY:TAG) names the registry's scheme too,
	// as OPA's services of type oci do.
	URL string `json:"url" yaml:"url"`
	// Type is "" or "http" for a bundle server, "oci" for an OCI
	// registry (OPA's service type); an oci:// URL implies "oci".
	Type        string      `json:"type,omitempty" yaml:"type"`
	Credentials Credentials `json:"credentials,omitzero" yaml:"credentials"`
	Polling     Polling     `json:"polling" yaml:"polling"`
	Signing     Signing     `json:"signing" yaml:"signing"`
	// RefuseOlderRevisions refuses, like a badly signed one, a bundle
	// whose manifest revision is older (CompareRevisions) than the one
	// serving, or empty: a validly signed old bundle replayed by whoever
	// controls the bundle server or the network cannot roll policies back.
	// Off, such a bundle activates and is logged and counted (Status.Rollbacks).
	// toolgate's own key; OPA has none.
	RefuseOlderRevisions bool `json:"refuse_older_revisions,omitempty" yaml:"refuse_older_revisions"`
}

// Type values of Config.
const (
	TypeHTTP = "http"
	TypeOCI  = "oci"
)

// Credentials authenticate the downloads, as OPA's service credentials
// do; the zero value sends none.
type Credentials struct {
	Bearer Bearer `json:"bearer,omitzero" yaml:"bearer"`
}

// Bearer is OPA's bearer credential: the token is read from TokenPath
// on every request (so a rotated file is picked up) and sent as
// "Authorization: SCHEME TOKEN". The token never sits in the config.
type Bearer struct {
	TokenPath string `json:"token_path,omitempty" yaml:"token_path"`
	// Scheme defaults to Bearer.
	Scheme string `json:"scheme,omitempty" yaml:"scheme"`
}

// OCI reports whether the bundle is pulled from an OCI registry.
func (c Config) OCI() bool {
	return c.Type == TypeOCI || strings.HasPrefix(c.URL, "oci://")
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

// Validate reports every problem of c at once: a URL that is not http(s)
// (or oci:// with a repository), an unknown type, polling delays set alone
// or out of order. The key file is read by New.
func (c Config) Validate() error {
	var errs []error
	switch c.Type {
	case "", TypeHTTP, TypeOCI:
	default:
		errs = append(errs, fmt.Errorf("bundle type: want %q or %q", TypeHTTP, TypeOCI))
	}
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "oci":
		errs = append(errs, fmt.Errorf("bundle url: want an http(s) URL of a bundle, or oci://REGISTRY/REPOSITORY:TAG"))
	case u.Scheme == "oci" && c.Type == TypeHTTP:
		errs = append(errs, fmt.Errorf("bundle url: an oci:// URL is of type %q", TypeOCI))
	case c.OCI() && (strings.Trim(u.Path, "/") == "" || u.RawQuery != "" || u.User != nil):
		errs = append(errs, fmt.Errorf("bundle url: want an OCI reference REGISTRY/REPOSITORY:TAG (or @DIGEST), without query or user"))
	case c.OCI():
		if _, err := ociReference(u); err != nil {
			errs = append(errs, fmt.Errorf("bundle url: %w", err))
		}
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

// ociReference is the OCI reference u names, REGISTRY/REPOSITORY:TAG (or
// @DIGEST), as OPA's OCI downloader takes it; it fails when there is no
// tag or digest, as the downloader would pull nothing.
func ociReference(u *url.URL) (string, error) {
	ref := u.Host + "/" + strings.TrimPrefix(u.Path, "/")
	r, err := registry.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if r.Reference == "" {
		return "", fmt.Errorf("the OCI reference %q has no tag or digest", ref)
	}
	return ref, nil
}
