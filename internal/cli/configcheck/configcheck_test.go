package configcheck

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/inspect"
)

// The registries of the inspect package's tests the config checks run
// beside.
const baseRegistry = `
sections:
  reports: { roles: [admin] }
tools:
  - { name: echo, method: demo.echo, arguments: [{ name: text, type: string }] }
  - { name: fetch, method: demo.fetch, driver: url }
  - { name: report, method: demo.report, section: reports }
  - { name: up, method: "upstream:svc/tool", arguments: [{ name: q, type: string }] }
`

const twoTools = `
sections:
  team: { roles: [user] }
tools:
  - { name: echo, method: demo.echo, section: team, annotations: { readOnlyHint: true } }
  - { name: report, method: demo.report, section: team }
`

func source(registryDoc string, policies map[string]string) engine.Source {
	fsys := fstest.MapFS{"registry.yaml": {Data: []byte(registryDoc)}, "rego": {Mode: fs.ModeDir}}
	for name, text := range policies {
		fsys["rego/"+name] = &fstest.MapFile{Data: []byte(text)}
	}
	return engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "rego"}
}

// findings renders a report's findings of one code as their strings.
func findings(fs []inspect.Finding, code string) []string {
	var out []string
	for _, f := range fs {
		if f.Code == code {
			out = append(out, f.String())
		}
	}
	return out
}

// TestCheckConfigRenamedKeys: a serve config key under its former
// camelCase name is a warning naming it, its line and the new name; the
// file is otherwise checked as usual.
func TestCheckConfigRenamedKeys(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte("ledger: memory\nmaxSessions: 5\nlist_fallback: hidden\n"), 0o600))
	rep := inspect.Check(context.Background(), inspect.CheckOptions{Source: source(baseRegistry, nil), Config: File(path)})
	var renamed, invalid []inspect.Finding
	for _, f := range rep.Warnings {
		if f.Code == inspect.CodeConfigRenamed {
			renamed = append(renamed, f)
		}
	}
	for _, f := range rep.Errors {
		if f.Code == inspect.CodeConfigInvalid {
			invalid = append(invalid, f)
		}
	}
	require.Len(t, renamed, 1)
	assert.Equal(t, inspect.Finding{Code: inspect.CodeConfigRenamed, File: path, Line: 2, Field: "maxSessions",
		Message: "maxSessions is now named max_sessions; the old name is read until the next release"}, renamed[0])
	require.Len(t, invalid, 1)
	assert.Equal(t, "list_fallback", invalid[0].Field)
}
