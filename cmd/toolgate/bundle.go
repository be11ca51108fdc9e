package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
)

// bundleFlags are --bundle FILE and --bundle-verification-key FILE of the
// commands that load a source (check, explain): an OPA bundle file instead
// of --registry and --policy (docs/contract.md §14).
type bundleFlags struct {
	file, key string
}

func (b *bundleFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.file, "bundle", "", "load registry and policies from the OPA bundle `FILE` (.tar.gz, as toolgate build or opa build makes it) instead of --registry and --policy")
	fs.StringVar(&b.key, "bundle-verification-key", "", "verify the bundle's signature with the PEM public key in `FILE`")
}

func (b *bundleFlags) source(registry, policy string) (engine.Source, error) {
	if registry != "" || policy != "" {
		return engine.Source{}, errors.New("--bundle holds registry and policies: give it or --registry/--policy, not both")
	}
	return bundle.OpenFile(b.file, bundle.Signing{KeyFile: b.key})
}

// isBundleFile says whether a path given to `toolgate test` is a bundle.
func isBundleFile(p string) bool {
	if !strings.HasSuffix(p, ".tar.gz") && !strings.HasSuffix(p, ".tgz") {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// unpackBundles replaces each bundle file among paths by a temporary
// directory holding its policies, tests and data, for policytest, which
// reads directories; cleanup removes them.
func unpackBundles(paths []string) (out []string, cleanup func(), err error) {
	var dirs []string
	cleanup = func() {
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	}
	for _, p := range paths {
		if !isBundleFile(p) {
			out = append(out, p)
			continue
		}
		src, err := bundle.OpenFile(p, bundle.Signing{})
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
		dir, err := os.MkdirTemp("", "toolgate-test-bundle-")
		if err != nil {
			cleanup()
			return nil, func() {}, err
		}
		dirs = append(dirs, dir)
		if err := bundle.Unpack(src, dir); err != nil {
			cleanup()
			return nil, func() {}, fmt.Errorf("bundle %s: %w", p, err)
		}
		out = append(out, dir)
	}
	return out, cleanup, nil
}

func init() {
	register(command{name: "build", summary: "make an OPA bundle of a registry and its policies (docs/contract.md §14)", run: runBuildCommand})
}

const buildSynopsis = "build [--registry FILE] [--policy DIR] [-o FILE] [--revision REV] [--signing-key FILE [--signing-alg ALG] [--signing-key-id ID]] [--capabilities FILE]"

// buildParams is `toolgate build` once its flags are read.
type buildParams struct {
	src  engine.Source
	out  string
	opts bundle.BuildOptions
	caps capabilitiesFlag
}

func runBuildCommand(ctx context.Context, e *env) int {
	var (
		src sourceFlags
		p   buildParams
	)
	fs := newFlags("build", buildSynopsis, e.stderr)
	fs.StringVar(&src.registry, "registry", "", config.FlagSetting("registry").FlagUsage())
	fs.StringVar(&src.policy, "policy", "", "the policy `DIR` ("+config.FlagSetting("policy").DefaultText()+")")
	fs.StringVar(&p.out, "o", "bundle.tar.gz", "write the bundle to `FILE`")
	fs.StringVar(&p.opts.Revision, "revision", "", "the bundle's manifest `REV`ision, shown in /healthz and audit records (for example a commit id)")
	fs.StringVar(&p.opts.SigningKeyFile, "signing-key", "", "sign the bundle with the PEM private key (or HMAC secret) in `FILE`, as opa build --signing-key")
	fs.StringVar(&p.opts.Algorithm, "signing-alg", bundle.DefaultAlgorithm, "the signing `ALG`orithm")
	fs.StringVar(&p.opts.KeyID, "signing-key-id", bundle.DefaultKeyID, "the signing key's `ID`, as the server's bundle.signing.keyid names it")
	p.caps.register(fs)
	if done, code := parseFlags(fs, e.args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, e.stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var err error
	if p.src, err = src.source(); err != nil {
		return usageError(fs, e.stderr, "%v", err)
	}
	return p.run(ctx, e)
}

// run builds the bundle into a temporary file renamed over out: exit 0,
// or 1 when the source does not load (every problem on stderr).
func (p *buildParams) run(ctx context.Context, e *env) int {
	caps, err := p.caps.load()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate build: %v\n", err)
		return 1
	}
	if caps != nil {
		p.opts.Engine = append(p.opts.Engine, engine.WithCapabilities(caps))
	}
	f, err := os.CreateTemp(filepath.Dir(p.out), ".toolgate-build-*")
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate build: %v\n", err)
		return 1
	}
	defer os.Remove(f.Name())
	err = bundle.Build(ctx, f, p.src, p.opts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), p.out)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate build: %v\n", err)
		return 1
	}
	fmt.Fprintf(e.stdout, "wrote %s\n", p.out)
	return 0
}
