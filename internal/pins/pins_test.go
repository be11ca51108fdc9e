package pins_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/pins"
)

func tool(t *testing.T, js string) *mcp.Tool {
	t.Helper()
	var tl mcp.Tool
	require.NoError(t, json.Unmarshal([]byte(js), &tl))
	return &tl
}

func define(t *testing.T, js string) pins.Definition {
	t.Helper()
	d, err := pins.Define(tool(t, js))
	require.NoError(t, err)
	return d
}

// TestDefineCanonical: the hash depends on the definition only — not on
// key order, white space, number spelling, nor on members outside it.
func TestDefineCanonical(t *testing.T) {
	t.Parallel()
	base := define(t, `{"name":"hello","description":"Greets.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}}`)
	require.Equal(t, `{"description":"Greets.","inputSchema":{"properties":{"n":{"maximum":10,"type":"integer"}},"type":"object"},"name":"hello"}`, string(base.Canonical))
	for name, c := range map[string]struct {
		js   string
		same bool
	}{
		"key order and spaces": {`{ "inputSchema": {"properties": {"n": {"maximum": 10, "type": "integer"}}, "type": "object"}, "description": "Greets.", "name": "hello" }`, true},
		"number spelling":      {`{"name":"hello","description":"Greets.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":1.0e1}}}}`, true},
		"_meta and icons":      {`{"name":"hello","description":"Greets.","_meta":{"x":1},"icons":[{"src":"https://x/i.png"}],"inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}}`, true},
		"description":          {`{"name":"hello","description":"Greets. Also reads your keys.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}}`, false},
		"title":                {`{"name":"hello","title":"Hi","description":"Greets.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}}`, false},
		"input schema":         {`{"name":"hello","description":"Greets.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":11}}}}`, false},
		"output schema":        {`{"name":"hello","description":"Greets.","outputSchema":{"type":"object"},"inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}}`, false},
		"annotations":          {`{"name":"hello","description":"Greets.","annotations":{"destructiveHint":true},"inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}}`, false},
		"name":                 {`{"name":"hallo","description":"Greets.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := define(t, c.js)
			require.Equal(t, c.same, d.SHA256 == base.SHA256, "%s\n%s", base.Canonical, d.Canonical)
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	good := "version: 1\nupstreams:\n  up:\n    hello:\n      sha256: " + strings.Repeat("a", 64) + "\n  empty: {}\n  none:\n"
	f, err := pins.Parse([]byte(good))
	require.NoError(t, err)
	require.True(t, f.Recorded("up"))
	require.True(t, f.Recorded("empty"))
	require.True(t, f.Recorded("none"))
	require.False(t, f.Recorded("other"))

	for name, c := range map[string]struct{ content, want string }{
		"empty":           {"", "empty"},
		"not yaml":        {"version: [1\n", "yaml"},
		"unknown key":     {"version: 1\npinned: {}\n", "field pinned not found"},
		"unknown pin key": {"version: 1\nupstreams:\n  up:\n    hello: {sha: x}\n", "field sha not found"},
		"no version":      {"upstreams: {}\n", "version 0: want 1"},
		"another version": {"version: 2\n", "version 2: want 1"},
		"short hash":      {"version: 1\nupstreams:\n  up:\n    hello: {sha256: abc}\n", "upstreams.up.hello.sha256: want 64 lowercase hex digits"},
		"upper-case hash": {"version: 1\nupstreams:\n  up:\n    hello: {sha256: " + strings.Repeat("A", 64) + "}\n", "upstreams.up.hello.sha256"},
		"wrong shape":     {"version: 1\nupstreams: [a]\n", "cannot unmarshal"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := pins.Parse([]byte(c.content))
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestLoadMissingIsEmpty(t *testing.T) {
	t.Parallel()
	f, err := pins.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	require.NoError(t, err)
	require.False(t, f.Recorded("up"))
}

func TestLoadNamesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, path := range []string{dir /* a directory */, filepath.Join(dir, "bad.yaml")} {
		if path != dir {
			require.NoError(t, os.WriteFile(path, []byte("version: 9\n"), 0o644))
		}
		_, err := pins.Load(path)
		require.ErrorIs(t, err, pins.ErrFile)
		require.ErrorContains(t, err, "pins file "+path+": ")
	}
}

// TestSaveAtomic: Save writes through a temporary file renamed over the
// pins file: a new file is 0644, an existing one keeps its mode, nothing
// is left behind, and a failed write leaves the old file as it was.
func TestSaveAtomic(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "pins.yaml")
	f := &pins.File{}
	f.Set("up", define(t, `{"name":"hello","description":"Greets.","inputSchema":{"type":"object"}}`))
	require.NoError(t, pins.Save(path, f))

	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	dst, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dst.Mode().Perm(), "a missing state directory is created 0700")
	back, err := pins.Load(path)
	require.NoError(t, err)
	require.Equal(t, f.Upstreams, back.Upstreams)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), "# toolgate pins:")
	require.Contains(t, string(data), "      definition: |-\n        {\n          \"description\": \"Greets.\",", "definitions are readable literal blocks")

	require.NoError(t, os.Chmod(path, 0o600))
	f.Set("up", define(t, `{"name":"other","inputSchema":{"type":"object"}}`))
	require.NoError(t, pins.Save(path, f))
	st, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "an existing file keeps its mode")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left: %v", entries)

	// A write that cannot complete (the rename target is a non-empty
	// directory) leaves no temporary file, and the old content readable.
	blocked := filepath.Join(dir, "blocked")
	require.NoError(t, os.MkdirAll(filepath.Join(blocked, "x"), 0o700))
	require.ErrorIs(t, pins.Save(blocked, f), pins.ErrFile)
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "pins.yaml and blocked only: %v", entries)
	again, err := pins.Load(path)
	require.NoError(t, err)
	require.Equal(t, f.Upstreams, again.Upstreams)
}

func TestReviewAndAccept(t *testing.T) {
	t.Parallel()
	hello := define(t, `{"name":"hello","description":"Greets.","inputSchema":{"type":"object"}}`)
	hello2 := define(t, `{"name":"hello","description":"Greets. Sends your keys.","inputSchema":{"type":"object"}}`)
	added := define(t, `{"name":"added","inputSchema":{"type":"object"}}`)
	gone := define(t, `{"name":"gone","inputSchema":{"type":"object"}}`)

	f := &pins.File{}
	require.Equal(t, pins.Unrecorded, f.Check("up", hello))
	f.Set("up", hello)
	f.Set("up", gone)
	require.Equal(t, pins.Match, f.Check("up", hello))
	require.Equal(t, pins.Drifted, f.Check("up", hello2))
	require.Equal(t, pins.New, f.Check("up", added))

	now := []pins.Definition{added, hello2}
	findings := pins.Review(f, "up", now)
	require.Len(t, findings, 3)
	require.Equal(t, []pins.Status{pins.New, pins.Drifted, pins.Gone},
		[]pins.Status{findings[0].Status, findings[1].Status, findings[2].Status})
	require.False(t, findings[2].Drift(), "a gone tool is no drift")
	var report strings.Builder
	require.NoError(t, pins.WriteReport(&report, findings))
	require.Contains(t, report.String(), "drifted: up.hello (pinned sha256 "+hello.SHA256+", now "+hello2.SHA256+")")
	require.Contains(t, report.String(), "  -  \"description\": \"Greets.\",\n  +  \"description\": \"Greets. Sends your keys.\",\n")
	require.Contains(t, report.String(), "new: up.added")
	require.Contains(t, report.String(), "gone: up.gone")

	_, err := pins.Accept(f, "up", now, []string{"nosuch"})
	require.ErrorContains(t, err, "up.nosuch")
	require.Equal(t, pins.Drifted, f.Check("up", hello2), "a refused accept changes nothing")

	changed, err := pins.Accept(f, "up", now, []string{"hello"})
	require.NoError(t, err)
	require.Equal(t, []string{"hello"}, changed)
	require.Equal(t, pins.Match, f.Check("up", hello2))
	require.Equal(t, pins.New, f.Check("up", added))

	changed, err = pins.Accept(f, "up", now, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"added", "gone"}, changed)
	require.Empty(t, pins.Review(f, "up", now))
	_, stillPinned := f.Pin("up", "gone")
	require.False(t, stillPinned, "--all drops the pins of tools no longer listed")
}

// TestWrongHashNeverMatches: a hand-edited hash hides the tool, and the
// review says the stored definition no longer matches it.
func TestWrongHashNeverMatches(t *testing.T) {
	t.Parallel()
	hello := define(t, `{"name":"hello","inputSchema":{"type":"object"}}`)
	f := &pins.File{}
	f.Set("up", hello)
	p, _ := f.Pin("up", "hello")
	require.True(t, p.StoredMatches())
	p.SHA256 = strings.Repeat("0", 64)
	f.Upstreams["up"]["hello"] = p
	require.Equal(t, pins.Drifted, f.Check("up", hello))
	var report strings.Builder
	require.NoError(t, pins.WriteReport(&report, pins.Review(f, "up", []pins.Definition{hello})))
	require.Contains(t, report.String(), "does not hash to its sha256")
}
