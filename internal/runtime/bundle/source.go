package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing/fstest"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/regoload"
)

// registryFile is the registry's name in the engine.Source a bundle
// becomes; the policies are at their paths in the bundle.
const registryFile = "registry.json"

// ErrNoRegistry is returned by ToSource for a bundle without data under
// toolgate/registry.
var ErrNoRegistry = errors.New("the bundle has no registry: want the registry document as data under toolgate/registry")

// ErrDelta is returned by ToSource for a delta bundle: a bundle is
// activated whole, as a reload is.
var ErrDelta = errors.New("delta bundles are not supported: serve a snapshot bundle")

// ToSource turns a bundle into an engine.Source in memory: the data under
// toolgate/registry is the registry (registry.json), every module of the
// bundle is a policy file at its path in the bundle, and the rest of the
// data is one data.json at the root. The engine then parses, compiles and
// validates it as it does files on disk. The source's Revision is the
// manifest's revision.
func ToSource(b *opabundle.Bundle) (engine.Source, error) {
	if b.Type() == opabundle.DeltaBundleType {
		return engine.Source{}, ErrDelta
	}
	data := b.Data
	tg, _ := data["toolgate"].(map[string]any)
	reg, ok := tg["registry"]
	if !ok {
		return engine.Source{}, ErrNoRegistry
	}
	regJSON, err := json.Marshal(reg)
	if err != nil {
		return engine.Source{}, fmt.Errorf("bundle registry: %w", err)
	}
	fsys := fstest.MapFS{
		registryFile: {Data: regJSON, Mode: 0o444},
	}
	// Everything but the registry is the policies' data; a copy, as the
	// bundle's maps are not ours to change.
	rest := make(map[string]any, len(data))
	for k, v := range data {
		rest[k] = v
	}
	if len(tg) > 1 {
		tgRest := make(map[string]any, len(tg)-1)
		for k, v := range tg {
			if k != "registry" {
				tgRest[k] = v
			}
		}
		rest["toolgate"] = tgRest
	} else {
		delete(rest, "toolgate")
	}
	if len(rest) > 0 {
		d, err := json.Marshal(rest)
		if err != nil {
			return engine.Source{}, fmt.Errorf("bundle data: %w", err)
		}
		fsys["data.json"] = &fstest.MapFile{Data: d, Mode: 0o444}
	}
	for _, m := range b.Modules {
		p := strings.TrimPrefix(path.Clean("/"+m.Path), "/")
		if p == "" || p == "." || regoload.KindOf(p) != regoload.Policy && regoload.KindOf(p) != regoload.Test {
			return engine.Source{}, fmt.Errorf("bundle: a module at %q", m.Path)
		}
		name := p
		if _, dup := fsys[name]; dup {
			return engine.Source{}, fmt.Errorf("bundle: two modules at %q", m.Path)
		}
		fsys[name] = &fstest.MapFile{Data: m.Raw, Mode: 0o444}
	}
	return engine.Source{FS: fsys, Registry: registryFile, Policies: ".", Revision: b.Manifest.Revision}, nil
}
