package image_test

import (
	"archive/tar"
	"bufio"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/image"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// EnvImage names an image tarball built by cmd/toolgate-image (CI builds
// it once), and EnvImage_VERSION the version it was built with; without
// it the test builds one.
const EnvImage = "TOOLGATE_TEST_IMAGE"

// testVersion is the version the test's own build gets.
const testVersion = "v0.0.0-imagetest"

// TestImage unpacks the built image as a runtime would and runs its
// entrypoint's `toolgate version` as the image's user: the binary is
// static, the CA certificates and the user are there, the state directory
// is a volume the user owns.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a static toolgate binary and its image; skipped with -short")
	}
	path, want := os.Getenv(EnvImage), os.Getenv(EnvImage+"_VERSION")
	if path == "" {
		proctest.RequireBuilds(t, "a static toolgate binary and its image")
		dir := t.TempDir()
		// Linked once per checkout and sources (go build's up-to-date
		// check): a warm run reuses it.
		bin, err := proctest.Cached("toolgate-static-"+runtime.GOARCH, func(out string) error {
			return image.BuildBinary(t.Context(), proctest.Root, out, runtime.GOARCH, testVersion)
		})
		require.NoError(t, err)
		img, err := image.Build(image.Options{Binary: bin, Arch: runtime.GOARCH, Version: testVersion})
		require.NoError(t, err)
		path = filepath.Join(dir, "image.tar")
		require.NoError(t, tarball.Write(nil, img, mustCreate(t, path)))
		want = testVersion
	}
	img, err := tarball.ImageFromPath(path, nil)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cf.OS)
	require.Equal(t, runtime.GOARCH, cf.Architecture)
	require.Equal(t, image.Config(cf.Config.Labels), cf.Config)

	root := worldReadableDir(t)
	owners := extract(t, img, root)
	uid, gid, err := image.User(cf.Config.User)
	require.NoError(t, err)
	require.NotZero(t, uid, "the image runs as a non-root user")
	require.Equal(t, [2]int{int(uid), int(gid)}, owners[strings.TrimPrefix(image.StateDir, "/")], "the user owns the state directory")
	require.Contains(t, cf.Config.Volumes, image.StateDir)
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	require.NoError(t, err)
	require.Contains(t, string(passwd), ":x:65532:65532:", "the user has an /etc/passwd entry")
	certs, err := os.ReadFile(filepath.Join(root, image.CACerts))
	require.NoError(t, err)
	require.Contains(t, string(certs), "-----BEGIN CERTIFICATE-----")

	entry := filepath.Join(root, cf.Config.Entrypoint[0])
	f, err := elf.Open(entry)
	require.NoError(t, err)
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary needs a dynamic loader")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "the binary links shared libraries")
	require.NoError(t, f.Close())

	cmd := exec.Command(entry, "version")
	cmd.Dir = root
	cmd.Env = append([]string{"HOME=" + filepath.Join(root, image.StateDir)}, cf.Config.Env...)
	switch euid := os.Geteuid(); {
	case euid == 0:
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	case euid != int(uid):
		if os.Getenv("CI") != "" {
			t.Fatalf("runs the entrypoint as uid %d: needs root or that uid (running as %d); CI is set, so this is a failure", uid, euid)
		}
		t.Skipf("runs the entrypoint as uid %d: needs root or that uid (running as %d)", uid, euid)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	first, _, _ := strings.Cut(string(out), "\n")
	require.True(t, strings.HasPrefix(first, "toolgate "), "%s", out)
	if want != "" {
		require.Equal(t, "toolgate "+want, first)
	}
	require.Contains(t, string(out), "\nopa ")

	// The default command serves as the user, its state (the default
	// SQLite ledger) in the volume: on loopback, any port, as the image's
	// 0.0.0.0 is a container's own network.
	args := append([]string(nil), cf.Config.Cmd...)
	for i, a := range args {
		if a == "0.0.0.0:"+image.Port {
			args[i] = "127.0.0.1:0"
		}
	}
	state := filepath.Join(root, image.StateDir)
	serve := exec.Command(entry, args...)
	serve.Dir = root
	serve.Env = []string{"XDG_STATE_HOME=" + state}
	serve.SysProcAttr = cmd.SysProcAttr
	p := proctest.Start(t, "the image's toolgate "+strings.Join(args, " "), serve)
	m := p.Await(t, p.Stdout, regexp.MustCompile(`serving MCP \(streamable HTTP\) at (http://\S+)/mcp`))
	resp, err := http.Get(m[1] + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	st, err := os.Stat(filepath.Join(state, "toolgate"))
	require.NoError(t, err, "the state directory toolgate made in the volume")
	require.Equal(t, uid, st.Sys().(*syscall.Stat_t).Uid, "made by the image's user")
}

// TestDockerfileIsTheImage: the Dockerfile's final stage says what the
// daemonless build makes: user, entrypoint, command, environment, volume,
// port, and the same files.
func TestDockerfileIsTheImage(t *testing.T) {
	f, err := os.Open(filepath.Join(proctest.Root, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var (
		stage []string // the instructions of the last stage, continuation lines joined
		line  string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && line == "") {
			continue
		}
		if c, ok := strings.CutSuffix(l, "\\"); ok {
			line += c + " "
			continue
		}
		line += l
		if strings.HasPrefix(line, "FROM ") {
			stage = nil
		}
		stage = append(stage, line)
		line = ""
	}
	require.NoError(t, sc.Err())
	c := image.Config(nil)
	jsonArray := func(v []string) string { b, _ := json.Marshal(v); return strings.ReplaceAll(string(b), ",", ", ") }
	require.Equal(t, []string{
		"FROM scratch",
		"COPY --from=build /out/ /",
		"USER " + c.User,
		"ENV " + c.Env[0],
		"VOLUME " + jsonArray([]string{image.StateDir}),
		"EXPOSE " + image.Port,
		"WORKDIR " + c.WorkingDir,
		"ENTRYPOINT " + jsonArray(c.Entrypoint),
		"CMD " + jsonArray(c.Cmd),
	}, stage)
	b, err := os.ReadFile(filepath.Join(proctest.Root, "Dockerfile"))
	require.NoError(t, err)
	for _, s := range []string{"CGO_ENABLED=0 go build -trimpath", "-o /out" + image.Binary, "/out" + image.CACerts,
		"chown 65532:65532 /out" + image.StateDir, image.VersionVar} {
		require.Contains(t, string(b), s)
	}
}

func mustCreate(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// worldReadableDir is a new directory every user can traverse (t.TempDir's
// parents are the test user's alone).
func worldReadableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "toolgate-image-rootfs")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// extract writes the image's flattened file system into root, with the
// entries' modes and (as root) owners, and returns each entry's owner
// (uid, gid) by its path.
func extract(t *testing.T, img v1.Image, root string) map[string][2]int {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	owners := map[string][2]int{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		name := filepath.Clean(h.Name)
		require.False(t, filepath.IsAbs(name) || strings.HasPrefix(name, ".."), "entry %q leaves the root", h.Name)
		owners[name] = [2]int{h.Uid, h.Gid}
		p := filepath.Join(root, name)
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(p, 0o755))
			require.NoError(t, os.Chmod(p, h.FileInfo().Mode()&(os.ModePerm|os.ModeSticky)))
		case tar.TypeReg:
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			require.NoError(t, err)
			_, err = io.Copy(w, tr)
			require.NoError(t, err)
			require.NoError(t, w.Close())
		default:
			t.Fatalf("entry %q of type %c", h.Name, h.Typeflag)
		}
		if os.Geteuid() == 0 { // as a runtime unpacks: owners too
			require.NoError(t, os.Lchown(p, h.Uid, h.Gid))
		}
	}
	return owners
}
