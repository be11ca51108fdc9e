package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	opabundle "github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/download"
	"github.com/open-policy-agent/opa/v1/keys"
	"github.com/open-policy-agent/opa/v1/logging"
	"github.com/open-policy-agent/opa/v1/plugins/rest"

	"github.com/toolgate/toolgate/engine"
)

// maxFileBytes bounds each file of a bundle, as docs/contract.md §9 bounds files on disk.
const maxFileBytes = 16 << 20

// Options configures a Client.
type Options struct {
	// StateDir is where the last good bundle is persisted (a directory
	// 0700 below it, files 0600); "" persists nothing.
	StateDir string
	// Logger receives activations and failures; nil discards them.
	Logger *slog.Logger
	// OnActivated, if set, is called after each bundle Run activates
	// that changed the revision; OnRefused after each download or
	// activation that failed (for metrics). They are called from the
	// polling goroutine, one at a time.
	OnActivated func(revision string)
	OnRefused   func(error)
}

// Status is what /healthz reports about the bundle.
type Status struct {
	// Revision is the manifest revision of the bundle serving, ETag the
	// bundle server's tag for it, ActivatedAt when it was activated.
	Revision    string    `json:"revision"`
	ETag        string    `json:"etag,omitempty"`
	ActivatedAt time.Time `json:"activated_at,omitzero"`
	// Persisted says the serving bundle was read from the state directory
	// at start, not downloaded since.
	Persisted bool `json:"persisted,omitempty"`
	// LastError is why the last bundle downloaded was refused (download,
	// signature, compile), empty once one activates; LastErrorAt is when.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Activations and Failures count the bundles activated after the first
	// and the downloads or activations that failed.
	Activations uint64 `json:"activations"`
	Failures    uint64 `json:"failures"`
	// Rollbacks counts the bundles whose manifest revision was older than
	// the one serving (CompareRevisions): activated, or refused with
	// Config.RefuseOlderRevisions.
	Rollbacks uint64 `json:"rollbacks"`
}

// Client downloads, verifies, activates and persists one bundle. Its
// methods are safe for concurrent use.
type Client struct {
	cfg  Config
	opts Options
	log  *slog.Logger
	bvc  *opabundle.VerificationConfig
	d    downloader
	dir  string // persistence directory; "" none
	// oci is the OCI downloader's blob store, a temporary directory
	// removed when Run ends; "" for a bundle server.
	oci  string
	name string // the bundle's name for OPA's reader

	mu      sync.Mutex
	eng     *engine.Engine // set by Run
	pending *engine.Source // a bundle downloaded before Run
	status  Status
}

// downloader is what the Client needs of OPA's download.Downloader
// (a bundle server) and download.OCIDownloader (an OCI registry).
type downloader interface {
	Start(context.Context)
	Stop(context.Context)
	Trigger(context.Context) error
	SetCache(string)
}

// New prepares a Client for cfg; it fails when cfg does not validate or
// the verification key cannot be read. Nothing is downloaded yet.
func New(cfg Config, opts Options) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("bundle url: %w", err)
	}
	// OPA's service (the registry or bundle server) and the resource
	// below it: a path on a bundle server, a reference in a registry.
	svcConf := map[string]any{"name": "bundle"}
	var resource string
	if cfg.OCI() {
		scheme := u.Scheme
		if scheme == "oci" {
			scheme = "https"
		}
		svcConf["url"] = (&url.URL{Scheme: scheme, Host: u.Host}).String()
		svcConf["type"] = TypeOCI
		if resource, err = ociReference(u); err != nil {
			return nil, fmt.Errorf("bundle url: %w", err)
		}
	} else {
		svcConf["url"] = (&url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User}).String()
		resource = strings.TrimPrefix(u.EscapedPath(), "/")
		if u.RawQuery != "" {
			resource += "?" + u.RawQuery
		}
	}
	// Every download goes through boundedAuth (MaxBundleBytes), which
	// applies the service's own credentials.
	creds := map[string]any{"plugin": limitPlugin}
	if b := cfg.Credentials.Bearer; b.TokenPath != "" {
		creds["bearer"] = map[string]any{"token_path": b.TokenPath, "scheme": b.Scheme}
	}
	svcConf["credentials"] = creds
	svc, err := json.Marshal(svcConf)
	if err != nil {
		return nil, err
	}
	rc, err := rest.New(svc, nil, rest.Logger(logging.NewNoOpLogger()),
		rest.AuthPluginLookup(func(name string) rest.HTTPAuthPlugin {
			if name == limitPlugin {
				return &boundedAuth{}
			}
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("bundle url: %w", err)
	}
	dc := download.Config{Polling: download.PollingConfig{MinDelaySeconds: cfg.Polling.MinDelaySeconds, MaxDelaySeconds: cfg.Polling.MaxDelaySeconds}}
	if err := dc.ValidateAndInjectDefaults(); err != nil {
		return nil, fmt.Errorf("bundle polling: %w", err)
	}
	c := &Client{cfg: cfg, opts: opts, log: opts.Logger, name: "toolgate"}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Signing.KeyFile != "" {
		if c.bvc, err = VerificationOf(cfg.Signing); err != nil {
			return nil, err
		}
	}
	if opts.StateDir != "" {
		key := cfg.URL
		if cfg.OCI() && u.Scheme != "oci" {
			key = "oci " + key // not the bundle server's at the same URL
		}
		sum := sha256.Sum256([]byte(key))
		c.dir = filepath.Join(opts.StateDir, "bundles", hex.EncodeToString(sum[:8]))
	}
	parser := ast.ParserOptions{RegoVersion: ast.RegoV1}
	if !cfg.OCI() {
		c.d = download.New(dc, rc, resource).
			WithCallback(c.update).
			WithBundleVerificationConfig(c.bvc).
			WithBundlePersistence(true). // hands the raw bytes to the callback, to persist them ourselves
			WithSizeLimitBytes(maxFileBytes).
			WithBundleName(c.name).
			WithBundleParserOpts(parser)
		return c, nil
	}
	// The OCI downloader pulls into a local OCI layout first; ours is
	// temporary (the bundle itself is persisted as for a bundle server,
	// and a layout kept would grow with every revision).
	if c.oci, err = os.MkdirTemp("", "toolgate-oci-*"); err != nil {
		return nil, fmt.Errorf("bundle: the OCI download directory: %w", err)
	}
	c.d = download.NewOCI(dc, rc, resource, c.oci).
		WithCallback(c.update).
		WithBundleVerificationConfig(c.bvc).
		WithBundlePersistence(true).
		WithSizeLimitBytes(maxFileBytes).
		WithBundleParserOpts(parser)
	return c, nil
}

// Discard removes what c keeps on disk for Run (the OCI download
// directory) when c will not Run: the source Initial returned is not
// served.
func (c *Client) Discard() { c.removeOCI() }

// removeOCI removes the OCI downloader's layout, when there is one.
func (c *Client) removeOCI() {
	if c.oci == "" {
		return
	}
	if err := os.RemoveAll(c.oci); err != nil {
		c.log.Warn("toolgate: cannot remove the OCI download directory", slog.String("dir", c.oci), slog.Any("error", err))
	}
}

// VerificationOf is the verification configuration of s: the key file read,
// KeyID and Algorithm defaulted as OPA does. It fails when the key file
// cannot be read.
func VerificationOf(s Signing) (*opabundle.VerificationConfig, error) {
	key, err := os.ReadFile(s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("bundle signing key: %w", err)
	}
	id, alg := s.KeyID, s.Algorithm
	if id == "" {
		id = DefaultKeyID
	}
	if alg == "" {
		alg = DefaultAlgorithm
	}
	kc := &keys.Config{Key: string(key), Algorithm: alg}
	return opabundle.NewVerificationConfig(map[string]*keys.Config{id: kc}, id, s.Scope, s.ExcludeFiles), nil
}

// Initial returns the source to start serving: the persisted last good
// bundle when there is one that reads and verifies (the bundle server may
// be down), else the bundle downloaded now. It fails when neither is to
// be had.
func (c *Client) Initial(ctx context.Context) (engine.Source, error) {
	if src, etag, err := c.loadPersisted(); err == nil {
		c.d.SetCache(etag) // the next poll gets 304 when it is still current
		c.mu.Lock()
		c.status.Revision, c.status.ETag, c.status.ActivatedAt, c.status.Persisted = src.Revision, etag, time.Now(), true
		c.mu.Unlock()
		c.log.Info("toolgate: serving the persisted bundle until the bundle server has a newer one", slog.String("revision", src.Revision))
		return src, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("toolgate: the persisted bundle is not usable; downloading", slog.Any("error", err))
	}
	if err := c.d.Trigger(ctx); err != nil {
		c.removeOCI() // nothing to run: serve does not start
		return engine.Source{}, fmt.Errorf("bundle: no persisted bundle and the download failed: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.removeOCI()
		return engine.Source{}, errors.New("bundle: no persisted bundle and the bundle server sent none")
	}
	src := *c.pending
	c.pending = nil
	return src, nil
}

// Run polls the bundle server until ctx is done, activating each new
// bundle on eng with engine.ReloadFrom (which tells eng's listeners, so
// sessions whose listing changed get list_changed). It returns nil when
// ctx ends. eng must have been built from the source Initial returned.
func (c *Client) Run(ctx context.Context, eng *engine.Engine) error {
	c.mu.Lock()
	c.eng = eng
	c.mu.Unlock()
	c.d.Start(ctx)
	<-ctx.Done()
	c.d.Stop(context.Background())
	c.removeOCI()
	return nil
}

// Status returns the bundle's status.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// update is the downloader's callback: one poll's outcome.
func (c *Client) update(ctx context.Context, u download.Update) error {
	if u.Error != nil {
		c.fail(fmt.Errorf("bundle download: %w", u.Error), false)
		return nil // the downloader retries with backoff
	}
	if u.Bundle == nil {
		return nil // 304: the bundle serving is current
	}
	var raw []byte
	if u.Raw != nil {
		var err error
		if raw, err = io.ReadAll(u.Raw); err != nil {
			c.fail(fmt.Errorf("bundle download: %w", err), false)
			return nil
		}
	}
	src, err := ToSource(u.Bundle)
	if err != nil {
		c.fail(err, false)
		return nil
	}
	c.mu.Lock()
	eng := c.eng
	if eng == nil {
		// Initial's download: the engine is built from it by the caller.
		c.pending = &src
		c.activated(src.Revision, u.ETag)
		c.mu.Unlock()
		c.persist(raw, u.ETag)
		return nil
	}
	serving := c.status.Revision
	older := CompareRevisions(src.Revision, serving) < 0 || src.Revision == "" && serving != ""
	if older {
		c.status.Rollbacks++
	}
	c.mu.Unlock()
	if older {
		if c.cfg.RefuseOlderRevisions {
			c.fail(&RollbackError{Revision: src.Revision, Serving: serving}, false)
			return nil
		}
		c.log.Warn("toolgate: a bundle older than the one serving is activated (a rollback); bundle.refuse_older_revisions refuses such bundles",
			slog.String("revision", src.Revision), slog.String("serving", serving))
	}
	changed, err := eng.ReloadFrom(ctx, src)
	if err != nil {
		c.fail(fmt.Errorf("bundle: %w", err), true) // err names the revision
		return nil
	}
	c.mu.Lock()
	if changed {
		c.status.Activations++
	}
	c.activated(src.Revision, u.ETag)
	c.mu.Unlock()
	c.log.Info("toolgate: bundle activated", slog.String("revision", src.Revision), slog.Bool("changed", changed))
	c.persist(raw, u.ETag)
	if changed && c.opts.OnActivated != nil {
		c.opts.OnActivated(src.Revision)
	}
	return nil
}

// RollbackError refuses a bundle older than the one serving
// (Config.RefuseOlderRevisions).
type RollbackError struct {
	// Revision is the refused bundle's manifest revision, Serving the
	// serving one's.
	Revision, Serving string
}

func (e *RollbackError) Error() string {
	return fmt.Sprintf("bundle revision %q is older than %q, the one serving (bundle.refuse_older_revisions)", e.Revision, e.Serving)
}

// activated records the bundle serving; c.mu is held.
func (c *Client) activated(rev, etag string) {
	c.status.Revision, c.status.ETag, c.status.ActivatedAt, c.status.Persisted = rev, etag, time.Now(), false
	c.status.LastError, c.status.LastErrorAt = "", time.Time{}
}

// fail records a refused bundle or a failed download; the engine's
// status (and so /healthz) reports it too. A bundle that did not build is
// already the engine's failure (built says so).
func (c *Client) fail(err error, built bool) {
	c.mu.Lock()
	log := err.Error() != c.status.LastError
	c.status.LastError, c.status.LastErrorAt = err.Error(), time.Now()
	c.status.Failures++
	rev, eng := c.status.Revision, c.eng
	c.mu.Unlock()
	if log {
		c.log.Error("toolgate: bundle refused; the last good one keeps serving", slog.String("revision", rev), slog.Any("error", err))
	}
	if eng != nil && !built {
		eng.ReportFailure(err)
	}
	if eng != nil && c.opts.OnRefused != nil {
		c.opts.OnRefused(err)
	}
}

// Names of the persisted files in the persistence directory.
const (
	persistedBundle = "bundle.tar.gz"
	persistedETag   = "etag"
)

// persist writes the last good bundle, as downloaded, and its ETag; a
// failure is logged, not fatal (the bundle serves; only a restart without
// the server would miss it).
func (c *Client) persist(raw []byte, etag string) {
	if c.dir == "" || raw == nil {
		return
	}
	err := os.MkdirAll(c.dir, 0o700)
	if err == nil {
		err = writeFile(filepath.Join(c.dir, persistedBundle), raw)
	}
	if err == nil {
		err = writeFile(filepath.Join(c.dir, persistedETag), []byte(etag))
	}
	if err != nil {
		c.log.Warn("toolgate: cannot persist the bundle; a restart needs the bundle server", slog.Any("error", err))
	}
}

// writeFile replaces name atomically with a file of mode 0600.
func writeFile(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, nothing is there
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// loadPersisted reads and verifies the persisted bundle; os.ErrNotExist
// when there is none.
func (c *Client) loadPersisted() (engine.Source, string, error) {
	if c.dir == "" {
		return engine.Source{}, "", os.ErrNotExist
	}
	path := filepath.Join(c.dir, persistedBundle)
	f, err := os.Open(path)
	if err != nil {
		return engine.Source{}, "", err
	}
	defer f.Close()
	etag, err := os.ReadFile(filepath.Join(c.dir, persistedETag))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return engine.Source{}, "", err
	}
	b, err := Read(f, c.bvc)
	if err != nil {
		return engine.Source{}, "", fmt.Errorf("bundle %s: %w", path, err)
	}
	src, err := ToSource(&b)
	return src, string(etag), err
}

// Read reads a bundle (.tar.gz) as the Client does, verifying its
// signature when bvc is not nil. It is bounded as a download is: each file
// and the bundle as a whole, packed and unpacked (MaxBundleBytes; the
// refusal wraps ErrTooLarge), before OPA's reader holds any of it.
func Read(r io.Reader, bvc *opabundle.VerificationConfig) (opabundle.Bundle, error) {
	raw, err := readBounded(r, "the file")
	if err != nil {
		return opabundle.Bundle{}, err
	}
	rd := opabundle.NewCustomReader(opabundle.NewTarballLoader(bytes.NewReader(raw)).WithSizeLimitBytes(maxFileBytes)).
		WithRegoVersion(ast.RegoV1).
		WithSizeLimitBytes(maxFileBytes).
		WithBundleVerificationConfig(bvc)
	if bvc == nil {
		rd = rd.WithSkipBundleVerification(true)
	}
	return rd.Read()
}
