package policytest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/cli/policytest"
	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/internal/regoload"
)

// TestServeAndTestLoadAlike: `toolgate serve` (engine) and `toolgate test`
// (policytest) read policy directories through one loader and compile them
// with one configuration. A directory one refuses the other refuses, with
// the same diagnostics (code, file, line, column, message); one loads,
// the other loads. Test files are the one difference: serve never reads
// them.
func TestServeAndTestLoadAlike(t *testing.T) {
	t.Parallel()
	const registry = "tools:\n  - { name: echo, method: demo.echo }\n"
	grant := "package toolgate.grant\n\ngranted := {\"echo\"} if input.caller.subject == \"bob\"\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, dir string)
		// refused is false for a directory both load; the code (or, when
		// the problem has none, a part of the message) otherwise.
		refused bool
		want    string
	}{
		{name: "loads", files: map[string]string{"grant.rego": grant, "toolgate/lists/data.yaml": "allowed: [echo]\n"}},
		{name: "network built-in", refused: true, want: "rego_type_error",
			files: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1\"}).status_code == 200\n}\n"}},
		{name: "lookup built-in", refused: true, want: "rego_type_error",
			files: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if count(net.lookup_ip_addr(\"localhost\")) > 0\n"}},
		{name: "type error", refused: true, want: "rego_type_error",
			files: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\tx := 1 + \"a\"\n\tx > 0\n}\n"}},
		{name: "type error from a schema annotation", refused: true, want: "rego_type_error",
			files: map[string]string{"grant.rego": "package toolgate.grant\n\n# METADATA\n# schemas:\n#   - input: {\"type\": \"object\", \"properties\": {\"caller\": {\"type\": \"string\"}}}\ngranted := {\"echo\"} if input.caller.subject == \"bob\"\n"}},
		{name: "unsafe variable", refused: true, want: "rego_unsafe_var_error",
			files: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if x > 1\n"}},
		{name: "recursion through a watched rule", refused: true, want: "rego_recursion_error",
			files: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if \"echo\" in granted\n"}},
		{name: "parse error", refused: true, want: "rego_parse_error",
			files: map[string]string{"grant.rego": "package toolgate.grant\n\ngranted if {\n", "call.rego": "package toolgate.call\n\ndeny contains\n"}},
		{name: "rule and data document at one path", refused: true, want: "rego_compile_error",
			files: map[string]string{"grant.rego": grant, "toolgate/grant/data.json": `{"granted": ["echo"]}`}},
		{name: "data file not an object", refused: true, want: "the document must be an object",
			files: map[string]string{"grant.rego": grant, "data.json": `["echo"]`}},
		{name: "data file not JSON or YAML", refused: true, want: "data: ",
			files: map[string]string{"grant.rego": grant, "data.yaml": "a: [\n"}},
		{name: "data key defined twice", refused: true, want: "conflicts with a value already loaded",
			files: map[string]string{"grant.rego": grant, "data.json": `{"lists": 1}`, "lists/data.json": `{"allowed": []}`}},
		{name: "dot files are not loaded", files: map[string]string{
			"grant.rego": grant, ".draft.rego": "not rego", ".git/x.rego": "not rego either", "..2026_12_01/data.json": "[",
		}},
		{name: "a symlink into a dot folder is loaded", refused: true, want: "rego_parse_error",
			files: map[string]string{"..2026_12_01/grant.rego": "package toolgate.grant\n\ngranted if {\n"},
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.Symlink(filepath.Join("..2026_12_01", "grant.rego"), filepath.Join(dir, "grant.rego")))
			}},
		{name: "file over 16 MiB", refused: true, want: fsx.ErrTooLarge.Error(),
			files: map[string]string{"grant.rego": grant, "data.json": `{"x": "` + strings.Repeat("a", fsx.MaxFileSize) + `"}`}},
		{name: "policy that is not a regular file", refused: true, want: "not a regular file",
			files: map[string]string{},
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "grant.rego")))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, tc.files)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			reg := filepath.Join(t.TempDir(), "registry.yaml")
			require.NoError(t, os.WriteFile(reg, []byte(registry), 0o600))

			_, serveErr := engine.New(context.Background(), engine.Source{Registry: reg, Policies: dir})
			_, testErr := policytest.Run(context.Background(), policytest.Options{Paths: []string{dir}})
			if !tc.refused {
				require.NoError(t, serveErr)
				require.NoError(t, testErr)
				return
			}
			require.Error(t, serveErr, "serve loads what test refuses: %v", testErr)
			require.Error(t, testErr, "test loads what serve refuses: %v", serveErr)
			served, tested := diag.From(serveErr), diag.From(testErr)
			require.NotEmpty(t, served, "serve: %v", serveErr)
			require.Equal(t, served, tested, "serve: %v\ntest: %v", serveErr, testErr)
			for _, d := range served {
				require.True(t, d.Code == tc.want || strings.Contains(d.Message, tc.want), "%s, want %s", d, tc.want)
				require.True(t, strings.HasPrefix(d.File, dir), "the diagnostic names the file: %s", d)
				require.Contains(t, serveErr.Error(), d.Message)
				require.Contains(t, testErr.Error(), d.Message)
			}
		})
	}
}

// TestTestFilesAreOnlyTests: a test file that does not parse is refused by
// `toolgate test`, and never read by serve.
func TestTestFilesAreOnlyTests(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := set()\n", "grant_test.rego": "not rego"})
	reg := filepath.Join(t.TempDir(), "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("tools: []\n"), 0o600))
	_, err := engine.New(context.Background(), engine.Source{Registry: reg, Policies: dir})
	require.NoError(t, err)
	_, err = policytest.Run(context.Background(), policytest.Options{Paths: []string{dir}})
	require.Equal(t, filepath.Join(dir, "grant_test.rego"), diag.From(err)[0].File, "%v", err)
}

// TestServeAndTestShareCapabilities: a capabilities file that lists
// http.send lets both serve and test load a policy that calls it; without
// the file both refuse it; a file without the rego_v1 feature both refuse
// alike.
func TestServeAndTestShareCapabilities(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"grant.rego": "package toolgate.grant\n\ngranted := {\"echo\"} if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1\"}).status_code == 200\n}\n"})
	reg := filepath.Join(t.TempDir(), "registry.yaml")
	require.NoError(t, os.WriteFile(reg, []byte("tools: []\n"), 0o600))
	// caps is a capabilities file as serve and test each read it; nil
	// is neither (the default set).
	type caps struct {
		engine *engine.Capabilities
		opa    *ast.Capabilities
	}
	load := func(c *caps) (serve, test error) {
		var opts []engine.Option
		var opaCaps *ast.Capabilities
		if c != nil {
			opts = append(opts, engine.WithCapabilities(c.engine))
			opaCaps = c.opa
		}
		_, serve = engine.New(context.Background(), engine.Source{Registry: reg, Policies: dir}, opts...)
		_, test = policytest.Run(context.Background(), policytest.Options{Paths: []string{dir}, Capabilities: opaCaps})
		return serve, test
	}
	capsFile := func(features bool) *caps {
		// As `opa capabilities --current` writes it: http.send is in it.
		opa := ast.CapabilitiesForThisVersion()
		if !features {
			opa.Features = nil
		}
		b, err := json.Marshal(opa)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), "caps.json")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		c, err := engine.LoadCapabilities(p)
		require.NoError(t, err)
		o, err := regoload.LoadCapabilities(p)
		require.NoError(t, err)
		return &caps{engine: c, opa: o}
	}
	name := func(c *caps) string {
		if c == nil {
			return (*engine.Capabilities)(nil).String()
		}
		return c.engine.String()
	}

	serve, test := load(capsFile(true))
	require.NoError(t, serve)
	require.NoError(t, test)
	for _, c := range []*caps{nil, capsFile(false)} {
		serve, test := load(c)
		require.Error(t, serve, name(c))
		require.Error(t, test, name(c))
		require.NotEmpty(t, diag.From(serve), "%s: %v", name(c), serve)
		require.Equal(t, diag.From(serve), diag.From(test), "%s:\nserve: %v\ntest: %v", name(c), serve, test)
	}
}
