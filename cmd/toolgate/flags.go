package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/regoload"
)

// repeated is a flag that may be given more than once; each value is kept.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, ",") }

func (r *repeated) Set(v string) error {
	*r = append(*r, v)
	return nil
}

// newFlags returns a flag set for a command that reports to stderr, with
// usage naming the command's synopsis.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: toolgate %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; done is true when the command should return code
// right away (-h: 0, a usage error: 2).
func parseFlags(fs *flag.FlagSet, args []string) (done bool, code int) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return true, 0
	case err != nil:
		return true, 2
	}
	return false, 0
}

// usageError reports a usage problem the flag package did not catch.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "toolgate %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return 2
}

// sourceFlags are --registry and --policy, shared by the commands that load
// a registry and its policies (check, explain).
type sourceFlags struct {
	registry, policy string
	bundle           bundleFlags // cmd/toolgate/bundle.go
}

func (s *sourceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.registry, "registry", "", config.FlagSetting("registry").FlagUsage())
	fs.StringVar(&s.policy, "policy", "", "the policy `DIR` (default: the settings file's, else rego/ of the working directory, as for toolgate test, else the bundled example)")
	s.bundle.register(fs)
}

// settingsFlag is --config FILE for a command that reads serve's settings
// beside its own flags (check, explain): the flag of the settings table,
// and without it the project's toolgate.yaml when the working directory
// has one (toolgate init writes it), so that in a project the command
// reads what serve --config toolgate.yaml serves.
type settingsFlag string

func (c *settingsFlag) register(fs *flag.FlagSet, what string) {
	fs.StringVar((*string)(c), "config", "", config.FlagSetting("config").FlagUsage()+" (default: ./"+projectFile+" when present)"+what)
}

// file is the settings file named or found; "" when none.
func (c settingsFlag) file() string {
	if c != "" {
		return string(c)
	}
	return projectConfig()
}

// load reads the settings file; nil without one.
func (c settingsFlag) load() (*config.Serve, error) {
	f := c.file()
	if f == "" {
		return nil, nil
	}
	return config.LoadFile(f)
}

// fill takes what s names for the flags not given: registry, policy,
// capabilities.
func (s *sourceFlags) fill(set *config.Serve, caps *capabilitiesFlag) {
	if set == nil {
		return
	}
	if s.registry == "" {
		s.registry = set.Registry
	}
	if s.policy == "" {
		s.policy = set.Policy
	}
	if *caps == "" {
		*caps = capabilitiesFlag(set.Capabilities)
	}
}

// defaultRegistryFile is the registry test, check and explain read when
// neither a flag nor a settings file names one: registry.yaml of the
// working directory, beside defaultPolicyDir.
const defaultRegistryFile = "registry.yaml"

// defaultPolicyDir is the policy directory test, check and explain read
// when none is named: rego/ of the working directory, so that after an
// edit there the three agree.
const defaultPolicyDir = "rego"

// source returns the engine source the flags name. Without --policy it is
// defaultPolicyDir when the working directory has one; each part still not
// given is the bundled example's, under paths that say so ("(bundled)
// rego/grant.rego").
func (s *sourceFlags) source() (engine.Source, error) {
	if s.bundle.file != "" {
		return s.bundle.source(s.registry, s.policy)
	}
	policy := s.policy
	if policy == "" {
		if st, err := os.Stat(defaultPolicyDir); err == nil && st.IsDir() {
			policy = defaultPolicyDir
		}
	}
	reg := s.registry
	if reg == "" {
		if st, err := os.Stat(defaultRegistryFile); err == nil && st.Mode().IsRegular() {
			reg = defaultRegistryFile
		}
	}
	return toolgate.LabelledSource(reg, policy), nil
}

// capabilitiesFlag is --capabilities FILE, shared by the commands that
// compile policies, so that serve, test, check and explain agree on the
// built-ins a policy may call (docs/contract.md §11).
type capabilitiesFlag string

func (c *capabilitiesFlag) register(fs *flag.FlagSet) {
	fs.StringVar((*string)(c), "capabilities", "", config.CapabilitiesUsage)
}

// load reads the file; nil (the default set) without the flag.
func (c capabilitiesFlag) load() (*engine.Capabilities, error) {
	if c == "" {
		return nil, nil
	}
	return engine.LoadCapabilities(string(c))
}

// loadOPA reads the file as load does, for `toolgate test`, which compiles
// with OPA's own compiler; nil (the default set) without the flag.
func (c capabilitiesFlag) loadOPA() (*ast.Capabilities, error) {
	if c == "" {
		return nil, nil
	}
	return regoload.LoadCapabilities(string(c))
}

// formatFlag is --format text|json.
type formatFlag string

func (f *formatFlag) String() string { return string(*f) }

func (f *formatFlag) Set(v string) error {
	if v != "text" && v != "json" {
		return fmt.Errorf("want text or json, got %q", v)
	}
	*f = formatFlag(v)
	return nil
}
