package regoload_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/internal/regoload"
)

func TestKindOf(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]regoload.Kind{
		"a.rego": regoload.Policy, "dir/a_test.rego": regoload.Test, "x/data.json": regoload.Data, "data.yaml": regoload.Data,
		"data.yml": regoload.Data, "other.json": regoload.Other, "registry.yaml": regoload.Other, "rego": regoload.Other,
	} {
		require.Equal(t, want, regoload.KindOf(name), name)
	}
}

// TestWalk: dot names are skipped, symlinks into them followed; tests only
// on request; data documents by name; sorted by Rel.
func TestWalk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"b.rego": "package b", "a/data.yaml": "x: 1", "a/a_test.rego": "package a_test", "notes.md": "#",
		".hidden.rego": "x", "..2026_12_01/c.rego": "package c", ".git/d.rego": "x",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	require.NoError(t, os.Symlink(filepath.Join("..2026_12_01", "c.rego"), filepath.Join(dir, "c.rego")))

	rels := func(fs []regoload.File) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Rel)
		}
		return out
	}
	files, err := regoload.Walk(nil, dir, regoload.WalkOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"a/data.yaml", "b.rego", "c.rego"}, rels(files))
	require.Equal(t, filepath.Join(dir, "c.rego"), files[2].Name)
	require.Equal(t, "package c", string(files[2].Data))
	files, err = regoload.Walk(nil, dir, regoload.WalkOptions{Tests: true, StampOnly: true})
	require.NoError(t, err)
	require.Equal(t, []string{"a/a_test.rego", "a/data.yaml", "b.rego", "c.rego"}, rels(files))
	require.Nil(t, files[0].Data)

	fsys := fstest.MapFS{"p/x.rego": {Data: []byte("package x")}, "p/.y.rego": {Data: []byte("y")}}
	files, err = regoload.Walk(fsys, "p", regoload.WalkOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"x.rego"}, rels(files))
	require.Equal(t, "p/x.rego", files[0].Name)
}

// TestWalkReportsEveryUnreadableFile: each file that is not a regular file
// of at most 16 MiB is named, the walk goes on, errors.Is sees why.
func TestWalkReportsEveryUnreadableFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "a.rego")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data.json"), make([]byte, fsx.MaxFileSize+1), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.rego"), []byte("package ok"), 0o600))
	_, err := regoload.Walk(nil, dir, regoload.WalkOptions{})
	require.ErrorIs(t, err, fsx.ErrNotRegular)
	require.ErrorIs(t, err, fsx.ErrTooLarge)
	ds := diag.From(err)
	require.Len(t, ds, 2)
	require.Equal(t, filepath.Join(dir, "a.rego"), ds[0].File)
	require.Equal(t, filepath.Join(dir, "data.json"), ds[1].File)
	require.Equal(t, ds[0].Message+"; "+ds[1].Message, err.Error())

	_, err = regoload.ReadNamed(filepath.Join(dir, "a.rego"))
	require.ErrorIs(t, err, fsx.ErrNotRegular)
	f, err := regoload.ReadNamed(filepath.Join(dir, "ok.rego"))
	require.NoError(t, err)
	require.Equal(t, regoload.Policy, f.Kind)
}

// TestParse: data mounts at its directory; every problem of every file is
// reported.
func TestParse(t *testing.T) {
	t.Parallel()
	p, err := regoload.Parse([]regoload.File{
		{Name: "x.rego", Rel: "x.rego", Kind: regoload.Policy, Data: []byte("package x\n\np := 1\n")},
		{Name: "l/data.yaml", Rel: "l/data.yaml", Kind: regoload.Data, Data: []byte("allowed: [a]\n")},
	}, ast.CapabilitiesForThisVersion())
	require.NoError(t, err)
	require.Equal(t, map[string]any{"l": map[string]any{"allowed": []any{"a"}}}, p.Data)
	require.Equal(t, []string{"x.rego", "l/data.yaml"}, p.Files)
	require.Contains(t, p.Modules, "x.rego")

	_, err = regoload.Parse([]regoload.File{
		{Name: "x.rego", Rel: "x.rego", Kind: regoload.Policy, Data: []byte("package x\n\np if {\n")},
		{Name: "data.json", Rel: "data.json", Kind: regoload.Data, Data: []byte("[1]")},
	}, ast.CapabilitiesForThisVersion())
	var list *diag.List
	require.True(t, errors.As(err, &list))
	require.Len(t, list.Diagnostics, 2)
	require.Equal(t, "rego_parse_error", list.Diagnostics[0].Code)
	require.Equal(t, diag.Diagnostic{File: "data.json", Message: "data: the document must be an object"}, list.Diagnostics[1])
}
