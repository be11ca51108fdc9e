// Package bundletest makes OPA bundles that toolgate must refuse, for
// tests: bundle.Build checks that a source loads, these do not.
package bundletest

import (
	"bytes"
	"io/fs"
	"os"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/regoload"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/registry"
)

// SignedUnchecked is bundle.Build of src (an fs.FS source) without the
// check that it loads, signed with the PEM private key in keyFile ("":
// unsigned).
func SignedUnchecked(src engine.Source, rev, keyFile string) ([]byte, error) {
	reg, err := fs.ReadFile(src.FS, src.Registry)
	if err != nil {
		return nil, err
	}
	doc, err := registry.Document(reg, registry.FormatOf(src.Registry))
	if err != nil {
		return nil, err
	}
	files, err := regoload.Walk(src.FS, src.Policies, regoload.WalkOptions{})
	if err != nil {
		return nil, err
	}
	b := opabundle.Bundle{Manifest: opabundle.Manifest{Revision: rev}, Data: map[string]any{"toolgate": map[string]any{"registry": doc}}}
	b.Manifest.Init()
	for _, f := range files {
		if f.Kind == regoload.Data {
			continue
		}
		b.Modules = append(b.Modules, opabundle.ModuleFile{URL: "/" + f.Rel, Path: "/" + f.Rel, Raw: f.Data})
	}
	if keyFile != "" {
		key, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, err
		}
		if err := b.GenerateSignature(opabundle.NewSigningConfig(string(key), bundle.DefaultAlgorithm, ""), bundle.DefaultKeyID, false); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := opabundle.NewWriter(&buf).DisableFormat(true).Write(b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
