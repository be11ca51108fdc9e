package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/regoload"
	"github.com/toolgate/toolgate/registry"
)

// BuildOptions configures Build.
type BuildOptions struct {
	// Revision is the manifest's revision (for example a commit id).
	Revision string
	// SigningKeyFile, when set, signs the bundle with the PEM private key
	// (or HMAC secret) in that file, as `opa build --signing-key` does;
	// KeyID (default DefaultKeyID) and Algorithm (default DefaultAlgorithm)
	// name it.
	SigningKeyFile string
	KeyID          string
	Algorithm      string
	// Engine are the options of the check that the bundle loads
	// (capabilities, for instance).
	Engine []engine.Option
}

// Build writes an OPA bundle (.tar.gz) of src to w: the registry as data
// under toolgate/registry, every policy and test file below the policy
// directory as a module at its path there, and the data files merged into
// the bundle's data.json. The source is loaded first, as `toolgate serve`
// would load it, so a bundle that Build writes loads; every problem of a
// source that does not is returned, and nothing is written.
func Build(ctx context.Context, w io.Writer, src engine.Source, o BuildOptions) error {
	if _, err := engine.New(ctx, src, o.Engine...); err != nil {
		return err
	}
	regData, err := src.ReadRegistry()
	if err != nil {
		return err
	}
	doc, err := registry.Document(regData, registry.FormatOf(src.Registry))
	if err != nil {
		return fmt.Errorf("registry %s: %w", src.Registry, err)
	}
	fsys := src.PolicyFS
	if fsys == nil {
		fsys = src.FS
	}
	files, err := regoload.Walk(fsys, src.Policies, regoload.WalkOptions{Tests: true})
	if err != nil {
		return err
	}
	parsed, err := regoload.Parse(files, nil)
	if err != nil {
		return err
	}
	data := parsed.Data
	tg, _ := data["toolgate"].(map[string]any)
	if _, clash := tg["registry"]; clash {
		return errors.New("bundle: the policies' data defines toolgate.registry, where the bundle keeps the registry")
	}
	if tg == nil {
		tg = map[string]any{}
		data["toolgate"] = tg
	}
	tg["registry"] = doc
	b := opabundle.Bundle{
		Manifest: opabundle.Manifest{Revision: o.Revision},
		Data:     data,
	}
	b.Manifest.Init()
	for _, f := range files {
		if f.Kind == regoload.Data {
			continue
		}
		b.Modules = append(b.Modules, opabundle.ModuleFile{URL: "/" + f.Rel, Path: "/" + f.Rel, Raw: f.Data, Parsed: parsed.Modules[f.Name]})
	}
	if o.SigningKeyFile != "" {
		key, err := os.ReadFile(o.SigningKeyFile)
		if err != nil {
			return fmt.Errorf("bundle signing key: %w", err)
		}
		alg, id := o.Algorithm, o.KeyID
		if alg == "" {
			alg = DefaultAlgorithm
		}
		if id == "" {
			id = DefaultKeyID
		}
		if err := b.GenerateSignature(opabundle.NewSigningConfig(string(key), alg, ""), id, false); err != nil {
			return fmt.Errorf("bundle signing: %w", err)
		}
	}
	return opabundle.NewWriter(w).DisableFormat(true).Write(b)
}
