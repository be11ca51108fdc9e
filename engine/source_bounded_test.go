package engine_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/fsx"
)

// TestOperatorFilesBounded: a registry, policy or data file that is
// not a regular file of at most 16 MiB fails to load with an error naming
// it, at once, at start and on reload; the last good revision keeps
// serving.
func TestOperatorFilesBounded(t *testing.T) {
	t.Parallel()
	type layout struct {
		registry string // the registry path; "" is a good registry file
		policy   func(t *testing.T, dir string) string
	}
	link := func(target string) func(*testing.T, string) string {
		return func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "grant.rego")
			require.NoError(t, os.Symlink(target, p))
			return p
		}
	}
	fifo := func(name string) func(*testing.T, string) string {
		return func(t *testing.T, dir string) string {
			p := filepath.Join(dir, name)
			require.NoError(t, syscall.Mkfifo(p, 0o600))
			return p
		}
	}
	big := func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "data.json")
		require.NoError(t, os.WriteFile(p, []byte(`{"x": "`+strings.Repeat("a", fsx.MaxFileSize)+`"}`), 0o600))
		return p
	}
	for _, tc := range []struct {
		name   string
		lay    layout
		errIs  error
		naming string // the file the error must name; "" is the registry
	}{
		{"registry is /dev/zero", layout{registry: "/dev/zero"}, fsx.ErrNotRegular, "/dev/zero"},
		{"registry is a directory", layout{registry: os.TempDir()}, fsx.ErrNotRegular, os.TempDir()},
		{"policy symlink to /dev/zero", layout{policy: link("/dev/zero")}, fsx.ErrNotRegular, "grant.rego"},
		{"policy is a FIFO", layout{policy: fifo("grant.rego")}, fsx.ErrNotRegular, "grant.rego"},
		{"data is a FIFO", layout{policy: fifo("data.json")}, fsx.ErrNotRegular, "data.json"},
		{"data over 16 MiB", layout{policy: big}, fsx.ErrTooLarge, "data.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			reg := filepath.Join(dir, "registry.yaml")
			require.NoError(t, os.WriteFile(reg, []byte(testRegistry), 0o600))
			pol := filepath.Join(dir, "policies")
			require.NoError(t, os.Mkdir(pol, 0o755))
			src := engine.Source{Registry: reg, Policies: pol}

			// On reload: the last good revision keeps serving.
			e, err := engine.New(context.Background(), src)
			require.NoError(t, err)
			good := e.Current()

			if tc.lay.registry != "" {
				src.Registry = tc.lay.registry
			}
			if tc.lay.policy != nil {
				tc.lay.policy(t, pol)
			}
			_, err = engine.New(context.Background(), src)
			require.ErrorIs(t, err, tc.errIs)
			require.Contains(t, err.Error(), tc.naming)

			if tc.lay.registry == "" {
				_, err = e.Reload(context.Background())
				require.ErrorIs(t, err, tc.errIs)
				require.Same(t, good, e.Current())
			}
		})
	}
}

// TestPoliciesCannotReachTheNetwork: by default a policy calling
// http.send or net.lookup_ip_addr fails to load, naming the built-in and
// its line, and no request is ever made; capabilities that list http.send
// (and the host) let it load and run.
func TestPoliciesCannotReachTheNetwork(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"allow": true}`))
	}))
	t.Cleanup(srv.Close)
	sendPolicy := "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\thttp.send({\"method\": \"GET\", \"url\": \"" + srv.URL + "\"}).body.allow\n}\n"
	lookupPolicy := "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\tcount(net.lookup_ip_addr(\"localhost\")) > 0\n}\n"

	for _, tc := range []struct{ name, policy, builtin string }{
		{"http.send", sendPolicy, "http.send"},
		{"net.lookup_ip_addr", lookupPolicy, "net.lookup_ip_addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := engine.Source{Registry: filepath.Join(dir, "registry.yaml"), Policies: dir}
			require.NoError(t, os.WriteFile(src.Registry, []byte(testRegistry), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "grant.rego"), []byte(tc.policy), 0o600))
			_, err := engine.New(context.Background(), src)
			var ce *engine.CompileError
			require.ErrorAs(t, err, &ce)
			require.Len(t, ce.Diagnostics, 1)
			d := ce.Diagnostics[0]
			require.Contains(t, d.Message, tc.builtin)
			require.Equal(t, filepath.Join(dir, "grant.rego"), d.File)
			require.Equal(t, 4, d.Row)
		})
	}
	require.Zero(t, hits.Load(), "a policy that does not load sent a request")

	// A capabilities file with http.send and the test server's host.
	dir := t.TempDir()
	src := engine.Source{Registry: filepath.Join(dir, "registry.yaml"), Policies: dir}
	require.NoError(t, os.WriteFile(src.Registry, []byte(testRegistry), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grant.rego"), []byte(sendPolicy), 0o600))
	capsFile := filepath.Join(t.TempDir(), "caps.json")
	host, _, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	// As `opa capabilities --current` writes it, with allow_net added.
	opa := ast.CapabilitiesForThisVersion()
	opa.AllowNet = []string{host}
	b, err := json.Marshal(opa)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(capsFile, b, 0o600))
	caps, err := engine.LoadCapabilities(capsFile)
	require.NoError(t, err)
	e, err := engine.New(context.Background(), src, engine.WithCapabilities(caps))
	require.NoError(t, err)
	require.Equal(t, []string{"echo"}, e.Current().Grant(context.Background(), carol, listReq).Granted())
	require.Positive(t, hits.Load())
}
