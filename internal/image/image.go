// Package image builds toolgate's container image without a container
// daemon (go-containerregistry): a static toolgate binary (CGO off,
// -trimpath), CA certificates, an /etc/passwd naming the non-root user the
// image runs as, and the state directory as a volume owned by that user, on
// an empty base. It is the image the Dockerfile describes; the Dockerfile
// builds the same one where a daemon exists (TestDockerfileIsTheImage).
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is; the Dockerfile says the same (TestDockerfileIsTheImage).
const (
	// UID and GID are the non-root user and group the image runs as.
	UID, GID = 65532, 65532
	// Binary is the entrypoint.
	Binary = "/usr/local/bin/toolgate"
	// StateDir is XDG_STATE_HOME and the image's volume: toolgate keeps
	// its state (the SQLite ledger, the last good bundle, pins) below it.
	StateDir = "/var/lib/toolgate"
	// CACerts is where Go's crypto/x509 looks for roots on Linux.
	CACerts = "/etc/ssl/certs/ca-certificates.crt"
	// Port is the HTTP port the default command serves.
	Port = "8787"
	// Repository is where the project publishes the image; the
	// Kubernetes manifest and the Helm chart name it.
	Repository = "ghcr.io/toolgate/toolgate"
)

// Cmd is the image's default command: serve HTTP on every interface.
var Cmd = []string{"serve", "--http", "0.0.0.0:" + Port}

// VersionVar is the linker variable (-X) that sets `toolgate version`'s
// version in a release build.
const VersionVar = "github.com/toolgate/toolgate/internal/version.override"

// BuildBinary builds the toolgate command of the module at root for
// linux/goarch into out: static (CGO_ENABLED=0), -trimpath, stripped, with
// version as `toolgate version`'s ("" keeps the module's).
func BuildBinary(ctx context.Context, root, out, goarch, version string) error {
	ldflags := "-s -w"
	if version != "" {
		ldflags += " -X " + VersionVar + "=" + version
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/toolgate")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/toolgate: %v\n%s", err, b)
	}
	return nil
}

// Options are the parts of an image.
type Options struct {
	Binary  string // a static linux toolgate binary (BuildBinary)
	CACerts string // a PEM bundle of CA certificates ("" is the host's CACerts)
	Arch    string // GOARCH of the binary
	Version string // the org.opencontainers.image.version label; "" none
	// Created is the time of the image and of every file in it; zero is
	// the Unix epoch, so that equal inputs give equal digests.
	Created time.Time
}

// Build returns the image.
func Build(opts Options) (v1.Image, error) {
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, err
	}
	if opts.CACerts == "" {
		opts.CACerts = CACerts
	}
	certs, err := os.ReadFile(opts.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	if opts.Created.IsZero() {
		opts.Created = time.Unix(0, 0)
	}
	layerTar, err := rootfs(bin, certs, opts.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	labels := map[string]string{
		"org.opencontainers.image.title":    "toolgate",
		"org.opencontainers.image.source":   "https://github.com/toolgate/toolgate",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if opts.Version != "" {
		labels["org.opencontainers.image.version"] = opts.Version
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", opts.Arch
	cf.Created = v1.Time{Time: opts.Created}
	cf.Config = Config(labels)
	return mutate.ConfigFile(img, cf)
}

// Config is the image's run configuration.
func Config(labels map[string]string) v1.Config {
	return v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{Binary},
		Cmd:          append([]string(nil), Cmd...),
		Env:          []string{"XDG_STATE_HOME=" + StateDir},
		Volumes:      map[string]struct{}{StateDir: {}},
		ExposedPorts: map[string]struct{}{Port + "/tcp": {}},
		WorkingDir:   "/",
		Labels:       labels,
	}
}

// rootfs is the image's one layer.
func rootfs(bin, certs []byte, mtime time.Time) ([]byte, error) {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	dir := func(name string, mode int64, uid, gid int) error {
		return w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: gid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	}
	user := "nonroot"
	for _, step := range []func() error{
		func() error { return dir("etc", 0o755, 0, 0) },
		func() error {
			return file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", user, UID, GID, user, StateDir))
		},
		func() error { return file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", user, GID)) },
		func() error { return dir("etc/ssl", 0o755, 0, 0) },
		func() error { return dir("etc/ssl/certs", 0o755, 0, 0) },
		func() error { return file(strings.TrimPrefix(CACerts, "/"), 0o644, certs) },
		func() error { return dir("tmp", 0o1777, 0, 0) },
		func() error { return dir("usr", 0o755, 0, 0) },
		func() error { return dir("usr/local", 0o755, 0, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0, 0) },
		func() error { return file(strings.TrimPrefix(Binary, "/"), 0o755, bin) },
		func() error { return dir("var", 0o755, 0, 0) },
		func() error { return dir(path.Dir(strings.TrimPrefix(StateDir, "/")), 0o755, 0, 0) },
		func() error { return dir(strings.TrimPrefix(StateDir, "/"), 0o700, UID, GID) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// User parses a config's User "UID:GID" (numeric, as this image's).
func User(s string) (uid, gid uint32, err error) {
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("user %q: want UID:GID", s)
	}
	un, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", s, err)
	}
	gn, err := strconv.ParseUint(g, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", s, err)
	}
	return uint32(un), uint32(gn), nil
}
