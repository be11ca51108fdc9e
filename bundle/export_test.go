package bundle

import (
	"bytes"
	"io/fs"
	"os"
	"testing"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/regoload"
	"github.com/toolgate/toolgate/registry"
)

// SignedUnchecked is Build without the check that the source loads: a
// bundle toolgate must refuse, for tests.
func SignedUnchecked(t *testing.T, src engine.Source, rev, keyFile string) []byte {
	t.Helper()
	reg, err := fs.ReadFile(src.FS, src.Registry)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := registry.Document(reg, registry.FormatOf(src.Registry))
	if err != nil {
		t.Fatal(err)
	}
	files, err := regoload.Walk(src.FS, src.Policies, regoload.WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := opabundle.Bundle{Manifest: opabundle.Manifest{Revision: rev}, Data: map[string]any{"toolgate": map[string]any{"registry": doc}}}
	b.Manifest.Init()
	for _, f := range files {
		b.Modules = append(b.Modules, opabundle.ModuleFile{URL: "/" + f.Rel, Path: "/" + f.Rel, Raw: f.Data})
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.GenerateSignature(opabundle.NewSigningConfig(string(key), DefaultAlgorithm, ""), DefaultKeyID, false); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := opabundle.NewWriter(&buf).DisableFormat(true).Write(b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
