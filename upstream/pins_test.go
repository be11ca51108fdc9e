package upstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/pins"
	"github.com/toolgate/toolgate/internal/testkit/testserver"
	"github.com/toolgate/toolgate/registry"
)

// stagedConfig is a pinned, importing in-memory upstream whose tools a
// test moves through testserver's stages.
func stagedConfig(t *testing.T, name string) (Config, *mcp.Server) {
	srv := testserver.New(testserver.Options{StageFile: filepath.Join(t.TempDir(), "stage")})
	return Config{Name: name, Import: true, Pin: true, Timeout: 5 * time.Second, Transport: func() mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			panic(err)
		}
		return ct
	}}, srv
}

// pinPool is a pool over cfgs with the pins file path; changed receives
// every ToolsChanged, drifts every OnDrift.
type pinPool struct {
	*Pool
	changed chan string
	mu      sync.Mutex
	drifts  []string
}

func newPinPool(t *testing.T, path string, cfgs ...Config) *pinPool {
	t.Helper()
	pp := &pinPool{changed: make(chan string, 16)}
	p, err := NewPool(cfgs, &Options{Pins: path, TerminateGrace: 500 * time.Millisecond,
		ToolsChanged: func(s string) { pp.changed <- s },
		OnDrift: func(s, tool string) {
			pp.mu.Lock()
			defer pp.mu.Unlock()
			pp.drifts = append(pp.drifts, s+"."+tool)
		}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	pp.Pool = p
	return pp
}

func (pp *pinPool) driftSeen() []string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return slices.Clone(pp.drifts)
}

func rowNames(rows []registry.Tool) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func importNames(t *testing.T, p *pinPool) []string {
	t.Helper()
	rows, err := p.Import(t.Context())
	require.NoError(t, err)
	return rowNames(rows)
}

// waitChanged waits for the upstream's tools to be listed anew after its
// notifications/tools/list_changed.
func waitChanged(t *testing.T, p *pinPool, server string) {
	t.Helper()
	timeout := time.After(time.Minute) // a failure bound only
	for {
		select {
		case s := <-p.changed:
			if s == server {
				return
			}
		case <-timeout:
			t.Fatalf("no ToolsChanged for %s", server)
		}
	}
}

// TestPinsFollowListChanged: the first import records every tool and
// serves it; the upstream's own list_changed makes the pool list again
// (ToolsChanged); a drifted tool and a new one are not imported, reported
// once per definition; a tool back at its pin is imported again.
func TestPinsFollowListChanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "pins.yaml")
	cfg, srv := stagedConfig(t, "up")
	plain := memoryConfig("plain")
	plain.Import = true
	p := newPinPool(t, path, cfg, plain)

	first := importNames(t, p)
	require.Contains(t, first, "up.hello")
	require.Contains(t, first, "plain.hello")
	f, err := pins.Load(path)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"crash", "echo", "fail", "hello", "interact", "mutate", "slow", testserver.LongName}, mapsKeys(f.Upstreams["up"]))
	require.NotContains(t, f.Upstreams, "plain", "only pinned upstreams are recorded")

	waitChanged(t, p, "up") // the first connection's listing

	testserver.SetStage(srv, testserver.StageDescription)
	waitChanged(t, p, "up")
	names := importNames(t, p)
	require.NotContains(t, names, "up.hello", "drifted: not imported")
	require.Contains(t, names, "up.echo")
	require.Contains(t, names, "plain.hello", "unpinned upstreams are not affected")
	_ = importNames(t, p)
	require.Equal(t, []string{"up.hello"}, p.driftSeen(), "reported once per definition")

	testserver.SetStage(srv, testserver.StageNewTool)
	waitChanged(t, p, "up")
	names = importNames(t, p)
	require.NotContains(t, names, "up.hello")
	require.NotContains(t, names, "up.added", "new: not imported")
	require.Equal(t, []string{"up.hello", "up.added", "up.hello"}, p.driftSeen(), "a new definition of a drifted tool counts again")

	testserver.SetStage(srv, testserver.StageBase)
	waitChanged(t, p, "up")
	require.Contains(t, importNames(t, p), "up.hello", "back at its pin: imported again")
	f2, err := pins.Load(path)
	require.NoError(t, err)
	require.Equal(t, f, f2, "serving never rewrites recorded pins")
}

func mapsKeys(m map[string]pins.Pin) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPinsWrongHashHides: a pin edited by hand to another hash hides its
// tool (fail closed); the others are served.
func TestPinsWrongHashHides(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pins.yaml")
	cfg, _ := stagedConfig(t, "up")
	p := newPinPool(t, path, cfg)
	require.Contains(t, importNames(t, p), "up.hello")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := pins.Load(path)
	require.NoError(t, err)
	pin, _ := f.Pin("up", "hello")
	wrong := strings.Replace(pin.SHA256, pin.SHA256[:1], map[bool]string{true: "1", false: "0"}[pin.SHA256[0] == '0'], 1)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), pin.SHA256, wrong, 1)), 0o644))

	names := importNames(t, p)
	require.NotContains(t, names, "up.hello")
	require.Contains(t, names, "up.echo")
}

// TestPinsUnreadableFile: a pins file that cannot be read or parsed is an
// error naming it, and the pinned upstreams contribute nothing; the
// unpinned ones still do.
func TestPinsUnreadableFile(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"not yaml":        "version: [1\n",
		"empty":           "",
		"unknown key":     "version: 1\nupstream: {}\n",
		"another version": "version: 2\nupstreams: {}\n",
		"bad hash":        "version: 1\nupstreams:\n  up:\n    hello: {sha256: nothex}\n",
		"directory":       "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "pins.yaml")
			if name == "directory" {
				require.NoError(t, os.Mkdir(path, 0o700))
			} else {
				require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			}
			cfg, _ := stagedConfig(t, "up")
			plain := memoryConfig("plain")
			plain.Import = true
			p := newPinPool(t, path, cfg, plain)
			rows, err := p.Import(t.Context())
			require.ErrorIs(t, err, pins.ErrFile)
			require.ErrorContains(t, err, path)
			names := rowNames(rows)
			require.Contains(t, names, "plain.hello")
			require.False(t, slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "up.") }), "%v", names)
		})
	}
}

func TestPinConfig(t *testing.T) {
	t.Parallel()
	cfg := memoryConfig("up")
	cfg.Pin = true
	_, err := NewPool([]Config{cfg}, &Options{Pins: "pins.yaml"})
	require.ErrorIs(t, err, ErrConfig, "pin without import")
	cfg.Import = true
	_, err = NewPool([]Config{cfg}, nil)
	require.ErrorIs(t, err, ErrConfig, "pin without a pins file")
	require.False(t, errors.Is(nil, ErrConfig))
}
