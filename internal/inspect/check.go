package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing/fstest"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/lines"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/toolcall"
)

// CheckOptions says what Check validates and for whom it measures the
// reach of URL drivers.
type CheckOptions struct {
	// Source is the registry and policy directory to check.
	Source engine.Source
	// Methods resolves rows' methods; nil skips the method checks. Rows
	// whose method is upstream:SERVER/TOOL are never checked here: an
	// upstream's tools are known only once it is connected.
	Methods methods.Set
	// Callers and RoleSets are whom the URL-driver reach is measured for:
	// every caller, then a caller with each role combination (no subject,
	// no claims). With neither, every combination of the roles the
	// registry's sections and the policies name is tried (see RoleSetsFor).
	Callers  []toolcall.Caller
	RoleSets [][]string
	// Capabilities are the built-ins policies may call, as the server has
	// them (docs/contract.md §11); nil is engine.DefaultCapabilities.
	Capabilities *engine.Capabilities
	// Config, when set, checks a serve config file (the binary's
	// internal/cli/configcheck.File): its problems are errors, and an
	// upstream's header, env value or client secret written in it as a
	// literal that looks like a credential is a warning
	// (docs/contract.md §17); a file, ${VAR} or stdio command it names
	// that is not there is an error or a warning. Nothing is started or
	// connected to. The library reads no config file itself.
	Config ConfigCheck
}

// ConfigCheck adds a serve config file's findings to r (Errorf, Warnf);
// policies is the policy directory Check compiles. Check runs it after the
// registry and internal types, before the policies.
type ConfigCheck func(policies string, r *CheckReport)

// CheckReport is the outcome of Check. Errors make `toolgate check` fail;
// warnings do not. Both are in a stable order: registry, internal types,
// policies, methods, then callers in the order tried.
type CheckReport struct {
	// Registry and Policies are the paths checked, as given.
	Registry string `json:"registry"`
	Policies string `json:"policies"`
	// RegistryLoaded and PoliciesLoaded say whether each loaded at all.
	RegistryLoaded bool `json:"registry_loaded"`
	PoliciesLoaded bool `json:"policies_loaded"`
	// Tools is the number of registry rows; 0 when the registry is invalid.
	Tools int `json:"tools"`
	// URLDrivers names the rows with driver: url.
	URLDrivers []string `json:"url_drivers"`
	// PolicyFiles are the policy and data files loaded; empty when the
	// policies do not compile.
	PolicyFiles []string `json:"policy_files"`
	// Callers are the callers the URL-driver reach was measured for; empty
	// when the registry or the policies did not load.
	Callers  []toolcall.Caller `json:"callers"`
	Errors   []Finding         `json:"errors"`
	Warnings []Finding         `json:"warnings"`
}

// OK reports whether the check found no error.
func (r *CheckReport) OK() bool { return len(r.Errors) == 0 }

// Errorf adds f, its message formatted, to the errors.
func (r *CheckReport) Errorf(f Finding, format string, args ...any) {
	f.Message = fmt.Sprintf(format, args...)
	r.Errors = append(r.Errors, f)
}

// Warnf adds f, its message formatted, to the warnings.
func (r *CheckReport) Warnf(f Finding, format string, args ...any) {
	f.Message = fmt.Sprintf(format, args...)
	r.Warnings = append(r.Warnings, f)
}

// Check validates a registry and its policies as a whole and reports every
// problem it finds, never only the first:
//
//   - the registry: every schema and semantic problem, and its warnings;
//   - the internal types' schemas;
//   - the policies: every parse and compile diagnostic, with file and line
//     (also when the registry itself is invalid); a warning for each rule
//     toolgate never reads in or next to a package it reads (rule_unread,
//     with what it likely meant), and for resource rules that are only
//     ever true without a default (no_default);
//   - with Config: the file's problems, credentials written in it, and
//     the files, variables and commands it names that are not there;
//   - with Methods: rows whose method is not registered and rows declaring
//     an argument their method lacks;
//   - the reach of URL drivers (docs/contract.md §7), for each caller: every tool hidden
//     while a URL driver is granted (a warning), and an error when a URL
//     driver is granted while data.toolgate.grant.url_drivers_decided is
//     not true. A grant decision that fails for a caller is an error too,
//     and so are two complete granted rules that both hold for one
//     (granted_conflict).
//
// Check never returns nil. It is safe for concurrent use with distinct
// options.
func Check(ctx context.Context, opts CheckOptions) *CheckReport {
	src := opts.Source
	r := &CheckReport{Registry: src.Registry, Policies: src.Policies, URLDrivers: []string{}, PolicyFiles: []string{},
		Callers: []toolcall.Caller{}, Errors: []Finding{}, Warnings: []Finding{}}
	reg := checkRegistry(src, r)
	checkTypes(r)
	if opts.Config != nil {
		opts.Config(src.Policies, r)
	}
	rev := checkPolicies(ctx, src, opts.Capabilities, reg != nil, r)
	if reg == nil {
		return r
	}
	if opts.Methods != nil {
		checkMethods(reg, opts.Methods, src.Registry, r)
	}
	if rev != nil {
		checkReach(ctx, rev, opts, r)
		checkGrantedConflicts(ctx, rev, policyRules(rev.PolicyModules()), r.Callers, r)
	}
	return r
}

// checkRegistry parses the registry as the engine does; nil when it does
// not load.
func checkRegistry(src engine.Source, r *CheckReport) *registry.Registry {
	at := Finding{File: src.Registry}
	data, err := src.ReadRegistry()
	if err != nil {
		at.Code = CodeRegistryUnreadable
		r.Errorf(at, "%v", err)
		return nil
	}
	reg, err := registry.Parse(data, registry.FormatOf(src.Registry))
	var (
		pe *registry.ParseError
		ve *registry.ValidationError
	)
	switch {
	case errors.As(err, &ve):
		for _, p := range ve.Problems {
			f := at
			f.Code = CodeRegistryInvalid
			if p.Row >= 0 {
				f.Row, f.Tool = rowPtr(p.Row), p.Tool
			}
			f.Field = p.Field
			r.Errorf(f, "%s", p.Message)
		}
		return nil
	case errors.As(err, &pe):
		at.Code, at.Line = CodeRegistryParse, pe.Line
		r.Errorf(at, "not valid %s: %v", strings.ToUpper(pe.Format), pe.Err)
		return nil
	case err != nil:
		at.Code = CodeRegistryParse
		r.Errorf(at, "%v", err)
		return nil
	}
	r.RegistryLoaded, r.Tools = true, len(reg.Tools)
	for i, t := range reg.Tools {
		if t.Driver == registry.DriverURL {
			r.URLDrivers = append(r.URLDrivers, reg.Tools[i].Name)
		}
	}
	for _, p := range reg.Warnings() {
		f := Finding{Code: CodeRegistryWarning, File: src.Registry, Field: p.Field}
		if p.Row >= 0 {
			f.Row, f.Tool = rowPtr(p.Row), p.Tool
		}
		r.Warnf(f, "%s", p.Message)
	}
	return reg
}

// checkTypes compiles every internal type's schema.
func checkTypes(r *CheckReport) {
	for _, n := range schema.TypeNames() {
		if _, err := schema.Compile(schema.TypeFile(n)); err != nil {
			r.Errorf(Finding{Code: CodeTypeInvalid, File: schema.TypeFile(n)}, "internal type %s: %v", n, err)
		}
	}
}

// stubRegistry stands in for an invalid registry, so that the policies are
// still compiled and every diagnostic of theirs reported.
const stubRegistry = `{"tools": []}`

// checkPolicies compiles the policies through the engine, so exactly what a
// server would load is checked. The revision is nil when they do not load.
func checkPolicies(ctx context.Context, src engine.Source, caps *engine.Capabilities, registryOK bool, r *CheckReport) *engine.Revision {
	if !registryOK {
		var cleanup func()
		var err error
		src, cleanup, err = withStubRegistry(src)
		if err != nil {
			r.Errorf(Finding{Code: CodePolicyLoad, File: src.Policies}, "policies not checked: %v", err)
			return nil
		}
		defer cleanup()
	}
	e, err := engine.New(ctx, src, engine.WithCapabilities(caps))
	var ce *engine.CompileError
	switch {
	case errors.As(err, &ce):
		// The engine compiles a copy of every rule it reads (to tell which
		// rule produced what), so a problem inside one is reported twice.
		seen := map[engine.Diagnostic]bool{}
		for _, d := range ce.Diagnostics {
			if seen[d] {
				continue
			}
			seen[d] = true
			msg := d.Message
			if d.Code != "" {
				msg = d.Code + ": " + msg
			}
			r.Errorf(Finding{Code: CodePolicyCompile, File: d.File, Line: d.Row, Col: d.Col}, "%s", msg)
		}
		return nil
	case err != nil:
		r.Errorf(Finding{Code: CodePolicyLoad, File: src.Policies}, "%v", err)
		return nil
	}
	rev := e.Current()
	r.PoliciesLoaded = true
	r.PolicyFiles = append(r.PolicyFiles, rev.PolicyFiles()...)
	rules := policyRules(rev.PolicyModules())
	checkRuleUse(rules, r)
	checkDefaults(rules, r)
	if !registryOK {
		return nil
	}
	return rev
}

// withStubRegistry returns src with its registry replaced by an empty one
// of its own file system. Policy file names stay as they are.
func withStubRegistry(src engine.Source) (engine.Source, func(), error) {
	const name = "toolgate-check-registry.json"
	if src.PolicyFS == nil {
		src.PolicyFS = src.FS // the policies keep where they are
	}
	src.RegistryFS = fstest.MapFS{name: {Data: []byte(stubRegistry)}}
	src.Registry = name
	return src, func() {}, nil
}

// checkMethods reports rows whose method is not registered and declared
// arguments their method does not take.
func checkMethods(reg *registry.Registry, ms methods.Set, file string, r *CheckReport) {
	for i := range reg.Tools {
		t := &reg.Tools[i]
		if strings.HasPrefix(t.Method, "upstream:") {
			continue
		}
		m, ok := ms.Method(t.Method)
		if !ok {
			r.Errorf(Finding{Code: CodeMethodUnknown, File: file, Row: rowPtr(i), Tool: t.Name, Field: "method"},
				"no method %q is registered: every call of the tool fails", t.Method)
			continue
		}
		for j, a := range t.Arguments {
			if !m.HasArgument(a.Name) {
				r.Errorf(Finding{Code: CodeArgumentUnknown, File: file, Row: rowPtr(i), Tool: t.Name, Field: fmt.Sprintf("arguments[%d].name", j)},
					"method %s has no argument %q: a call passing it gets \"Error: Unknown argument '%s'.\"", t.Method, a.Name, a.Name)
			}
		}
	}
}

// checkReach measures, caller by caller, what granted URL drivers reach.
func checkReach(ctx context.Context, rev *engine.Revision, opts CheckOptions, r *CheckReport) {
	reg := rev.Registry()
	callers := append([]toolcall.Caller(nil), opts.Callers...)
	sets := opts.RoleSets
	if len(opts.Callers) == 0 && len(opts.RoleSets) == 0 {
		var capped bool
		sets, capped = RoleSetsFor(rev)
		if capped {
			r.Warnf(Finding{Code: CodeRolesCapped, File: r.Registry},
				"the sections and policies name more than %d roles: only no role, each role alone and all roles together were tried; give --callers or --roles for the combinations that matter",
				MaxRoleSetRoles)
		}
	}
	for _, s := range sets {
		callers = append(callers, toolcall.Caller{Roles: append([]string{}, s...), Claims: map[string]any{}})
	}
	r.Callers = callers
	reported := map[string]bool{}
	for k := range callers {
		c := &callers[k]
		if rev.ResourcesDecided() {
			// Resources are decided one by one (docs/contract.md §16): a rule
			// that fails whatever the resource fails for this probe too.
			probe := &engine.Resource{URI: "toolgate:check", Upstream: "toolgate-check"}
			if rd := rev.GrantResource(ctx, c, engine.Request{Method: engine.MethodResourcesList}, probe); rd.Outcome == engine.Failed {
				r.Errorf(policyFinding(CodeResourceFailed, rd.Err, c), "data.toolgate.grant.resource fails (reads are refused, listings fall back to the base decision): %v", rd.Err)
			}
		}
		d := rev.Grant(ctx, c, engine.Request{Method: engine.MethodList})
		if d.Outcome == engine.Failed {
			r.Errorf(policyFinding(CodeGrantFailed, d.Err, c), "the grant decision fails (calls are refused, listings fall back to the base decision): %v", d.Err)
			continue
		}
		var unknown []string
		for _, n := range d.OverrideSet() {
			if rev.Tool(n) == nil {
				unknown = append(unknown, n)
			}
		}
		if key := strings.Join(unknown, "\x00"); len(unknown) > 0 && !reported[key] {
			reported[key] = true
			r.Warnf(Finding{Code: CodeGrantedUnknown, Caller: c, Tools: unknown},
				"granted names tools no row has (a misspelt name?): %s", strings.Join(unknown, ", "))
		}
		var drivers, hidden []string
		for i := range reg.Tools {
			t := &reg.Tools[i]
			ok, _ := d.Allowed(t.Name)
			switch {
			case !ok:
				hidden = append(hidden, t.Name)
			case t.Driver == registry.DriverURL:
				drivers = append(drivers, t.Name)
			}
		}
		if len(drivers) == 0 {
			continue
		}
		names := strings.Join(drivers, ", ")
		if len(hidden) > 0 {
			r.Warnf(Finding{Code: CodeURLReach, Caller: c, Tools: hidden},
				"URL driver %s is granted while %s hidden; it reaches every page it can name, also theirs: %s",
				names, plural(len(hidden), "tool")+map[bool]string{true: " is", false: " are"}[len(hidden) == 1], strings.Join(hidden, ", "))
		}
		decided, err := rev.URLDriversDecided(ctx, c)
		switch {
		case err != nil:
			r.Errorf(policyFinding(CodeGrantFailed, err, c), "url_drivers_decided fails: %v", err)
		case !decided:
			r.Errorf(Finding{Code: CodeURLUndecided, Caller: c, Tools: drivers},
				"URL driver %s is granted but data.toolgate.grant.url_drivers_decided is not true: decide on its reach and set it", names)
		}
	}
}

// policyFinding locates a policy failure at its rule when OPA said where.
func policyFinding(code string, err error, c *toolcall.Caller) Finding {
	f := Finding{Code: code, Caller: c}
	var pe *engine.PolicyError
	if errors.As(err, &pe) {
		f.File, f.Line, f.Col = pe.Location.File, pe.Location.Row, pe.Location.Col
	}
	return f
}

// WriteText writes the report for people: what was checked, then one line
// per error and warning (`error code: where: message`), then the counts.
func (r *CheckReport) WriteText(w io.Writer) error {
	p := lines.New(w)
	drivers := "none"
	if len(r.URLDrivers) > 0 {
		drivers = strings.Join(r.URLDrivers, ", ")
	}
	if r.RegistryLoaded {
		p.Line("registry  %s (%s; URL drivers: %s)", r.Registry, plural(r.Tools, "tool"), drivers)
	} else {
		p.Line("registry  %s (not loaded)", r.Registry)
	}
	files := "not loaded"
	switch {
	case r.PoliciesLoaded && len(r.PolicyFiles) == 0:
		files = "no policy files"
	case r.PoliciesLoaded:
		files = strings.Join(r.PolicyFiles, ", ")
	}
	p.Line("policies  %s (%s)", r.Policies, files)
	if len(r.Callers) > 0 {
		labels := make([]string, len(r.Callers))
		for i := range r.Callers {
			labels[i] = CallerLabel(&r.Callers[i])
		}
		p.Line("callers   %s", strings.Join(labels, "; "))
	}
	if len(r.Errors)+len(r.Warnings) > 0 {
		p.Line("")
	}
	for _, f := range r.Errors {
		p.Line("error   %s", f)
	}
	for _, f := range r.Warnings {
		p.Line("warning %s", f)
	}
	p.Line("")
	if r.OK() && len(r.Warnings) == 0 {
		p.Line("ok: no errors, no warnings")
	} else {
		p.Line("%s, %s", plural(len(r.Errors), "error"), plural(len(r.Warnings), "warning"))
	}
	return p.Err()
}

// WriteJSON writes the report as one indented JSON object.
func (r *CheckReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
