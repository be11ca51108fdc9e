package bundle

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/open-policy-agent/opa/v1/plugins/rest"
)

// MaxBundleBytes bounds a bundle as a whole, downloaded or read from a
// file (the persisted last good one, `--bundle FILE`), packed and
// unpacked (each file is bounded to 16 MiB besides). OPA's reader holds
// every file in memory before it checks a signature, so a bound on each
// file alone lets a bundle of many files (a gzip bomb) take any amount of
// memory, signed or not.
const MaxBundleBytes = 64 << 20

// limitPlugin is the name under which boundedAuth is looked up.
const limitPlugin = "toolgate-bounded"

// boundedAuth is the HTTP client of the downloads: the service's own
// credentials (bearer or none, OPA's plugin) with every 200 response read
// whole through MaxBundleBytes and, when it is gzip, unpacked once through
// the same bound before OPA reads it (a HEAD, which an OCI registry
// answers with the blob's size and no body, passes as it is). It is OPA's auth-plugin hook, the
// one place that gives the downloader its http.Client.
type boundedAuth struct {
	mu    sync.Mutex
	inner rest.HTTPAuthPlugin
}

// NewClient implements rest.HTTPAuthPlugin.
func (b *boundedAuth) NewClient(c rest.Config) (*http.Client, error) {
	c.Credentials.Plugin = nil // the service's own credentials, below
	inner, err := c.AuthPlugin(nil)
	if err != nil {
		return nil, err
	}
	hc, err := inner.NewClient(c)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.inner = inner
	b.mu.Unlock()
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out := *hc
	out.Transport = boundedTransport{rt}
	return &out, nil
}

// Prepare implements rest.HTTPAuthPlugin.
func (b *boundedAuth) Prepare(r *http.Request) error {
	b.mu.Lock()
	inner := b.inner
	b.mu.Unlock()
	if inner == nil {
		return fmt.Errorf("bundle: the download client is not ready")
	}
	return inner.Prepare(r)
}

type boundedTransport struct{ rt http.RoundTripper }

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || r.Method != http.MethodGet {
		return resp, err
	}
	data, err := readBounded(resp.Body, "bundle: the download")
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp, nil
}

// ErrTooLarge is wrapped by the refusal of a bundle over MaxBundleBytes,
// downloaded or read from a file.
var ErrTooLarge = fmt.Errorf("larger than %d MiB", MaxBundleBytes>>20)

// readBounded reads a bundle from r whole, refusing it when it is larger
// than MaxBundleBytes or, when it is gzip, unpacks to more (it is unpacked
// once to count, into nothing, before OPA's reader holds it); what names
// it in the refusal. What is not gzip is left for OPA's reader to refuse.
func readBounded(r io.Reader, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBundleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("%s is %w", what, ErrTooLarge)
	}
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
			n, _ := io.Copy(io.Discard, io.LimitReader(zr, MaxBundleBytes+1))
			if n > MaxBundleBytes {
				return nil, fmt.Errorf("%s is %w unpacked", what, ErrTooLarge)
			}
		}
	}
	return data, nil
}
