package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/upstream"
)

// setting is a serve flag: its value, and how a set flag overrides a
// Serve (Apply).
type setting struct {
	flag.Value
	apply func(dst *Serve)
}

func (s *setting) String() string {
	if s == nil || s.Value == nil {
		return "" // flag.PrintDefaults asks a zero setting
	}
	return s.Value.String()
}

func (s *setting) IsBoolFlag() bool {
	b, ok := s.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// ServeFlags registers the flags of `toolgate serve` (docs/contract.md §8) on fs and
// returns the Serve they parse into: one flag for each setting of the
// table (Settings) that has one, its usage and default from there. It
// holds only what the flags set: defaults come from SetDefaults, and a
// config file merges in with Apply (or use LoadServe, which does it all).
func ServeFlags(fs *flag.FlagSet) *Serve {
	f := &Serve{}
	for _, st := range settings {
		switch {
		case st.Flag == "":
		case st.Key == "" && !st.negate: // --config: where the settings come from, not one of them
			fs.StringVar(st.field(f).(*string), st.Flag, "", st.FlagUsage())
		default:
			fs.Var(&setting{Value: flagValue(st, f), apply: applyFlag(st, f)}, st.Flag, st.FlagUsage())
		}
	}
	return f
}

// flagValue is the flag.Value of st's field of f, by the field's kind.
func flagValue(st Setting, f *Serve) flag.Value {
	switch p := st.field(f).(type) {
	case *string:
		return (*stringValue)(p)
	case *bool:
		return (*boolValue)(p)
	case **bool:
		return &watchValue{p: p, negate: st.negate}
	case *time.Duration:
		return (*durationValue)(p)
	case *int:
		return (*intValue)(p)
	case *[]string:
		return (*listValue)(p)
	case *[]upstream.Settings:
		return (*upstreamsValue)(p)
	}
	panic(fmt.Sprintf("config: the flag %s has a field of kind %T", st.Flag, st.field(f)))
}

// applyFlag is how st's flag, set in f, overrides a Serve: st.merge, or
// the value replaces the one there.
func applyFlag(st Setting, f *Serve) func(dst *Serve) {
	if st.merge != nil {
		return func(dst *Serve) { st.merge(dst, f) }
	}
	return func(dst *Serve) {
		reflect.ValueOf(st.field(dst)).Elem().Set(reflect.ValueOf(st.field(f)).Elem())
	}
}

// Apply overrides s with every serve flag set on the parsed fs (fs.Visit:
// a flag left at its default changes nothing). Scalars replace; --role
// replaces the roles; --upstream replaces the upstream of the same name
// (keeping its import, section, trust_annotations, pin, prefix and
// remember settings) and adds
// the others.
func (s *Serve) Apply(fs *flag.FlagSet) {
	fs.Visit(func(fl *flag.Flag) {
		if st, ok := fl.Value.(*setting); ok {
			st.apply(s)
		}
	})
}

func mergeUpstreams(file, flags []upstream.Settings) []upstream.Settings {
	out := append([]upstream.Settings(nil), file...)
	for _, u := range flags {
		replaced := false
		for i := range out {
			if out[i].Name == u.Name {
				u.Import = out[i].Import
				u.Section, u.TrustAnnotations = out[i].Section, out[i].TrustAnnotations
				u.Pin, u.Prefix, u.Remember = out[i].Pin, out[i].Prefix, out[i].Remember
				u.Timeout = out[i].Timeout
				out[i], replaced = u, true
			}
		}
		if !replaced {
			out = append(out, u)
		}
	}
	return out
}

// LoadServe parses the serve flags in args, reads --config when given,
// merges the two (flags win), fills in the defaults and validates. Usage
// and flag errors go to stderr; -h returns flag.ErrHelp.
func LoadServe(args []string, stderr io.Writer) (*Serve, error) {
	fs := flag.NewFlagSet("toolgate serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := ServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	return Resolve(fs, flags, stderr)
}

// Resolve is LoadServe after the flags are parsed, for commands that take
// serve's settings besides their own (toolgate pins): flags is what
// ServeFlags returned for fs. A key of the file under its old name is
// logged as a warning to stderr.
func Resolve(fs *flag.FlagSet, flags *Serve, stderr io.Writer) (*Serve, error) {
	s := &Serve{}
	if flags.Config != "" {
		var (
			warnings []Problem
			err      error
		)
		if s, warnings, err = LoadFileWarnings(flags.Config); err != nil {
			return nil, err
		}
		logWarnings(stderr, flags.Config, warnings)
	}
	s.Apply(fs)
	stdioOnly(s, fs)
	if err := s.SetDefaults(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, nameFlags(err, fs)
	}
	return s, nil
}

// stdioOnly makes a stdio server listen on nothing else unless --http is
// on its command line (docs/contract.md §19): a desktop client starts one
// `toolgate serve --stdio` per session, and they may share a settings file
// whose http (and auth, which is for HTTP callers) serves another
// toolgate.
func stdioOnly(s *Serve, fs *flag.FlagSet) {
	if !s.Stdio {
		return
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["http"] {
		return
	}
	s.HTTP = ""
	if !set["issuer"] && !set["jwks"] && !set["resource"] && !set["audience"] && !set["allow-anonymous"] {
		s.Auth = identity.Settings{} // the file's: a flag's is refused without --http
		s.AllowAnonymous = false
	}
}

// logWarnings logs each warning of the file at path, as toolgate logs
// (slog text), to w.
func logWarnings(w io.Writer, path string, warnings []Problem) {
	if len(warnings) == 0 {
		return
	}
	log := slog.New(slog.NewTextHandler(w, nil))
	for _, p := range warnings {
		log.Warn("config: "+p.Message, slog.String("file", path), slog.Int("line", p.Line), slog.String("key", p.Key))
	}
}

// nameFlags renames the problems of settings given as flags after their
// flag (`--ledger`, not the config key `ledger`): flags win over the file,
// so a set flag is where the value came from. A problem of a key inside a
// section (auth.resource) keeps its key.
func nameFlags(err error, fs *flag.FlagSet) error {
	var ce *Error
	if !errors.As(err, &ce) {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for i, p := range ce.Problems {
		if p.Line != 0 {
			continue // from the file
		}
		if st, ok := lookupKey(p.Key); ok && st.Flag != "" && !strings.Contains(st.Key, ".") && set[st.Flag] {
			ce.Problems[i].Key = "--" + st.Flag
		}
	}
	return ce
}

type stringValue string

func (v *stringValue) String() string     { return string(*v) }
func (v *stringValue) Set(x string) error { *v = stringValue(x); return nil }

type boolValue bool

func (v *boolValue) String() string {
	if !*v {
		return "" // the zero value: flag.PrintDefaults shows no default
	}
	return "true"
}
func (v *boolValue) IsBoolFlag() bool { return true }
func (v *boolValue) Set(x string) error {
	b, err := strconv.ParseBool(x)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = boolValue(b)
	return nil
}

type durationValue time.Duration

func (v *durationValue) String() string {
	if *v == 0 {
		return ""
	}
	return time.Duration(*v).String()
}

func (v *durationValue) Set(x string) error {
	// Zero would silently mean the default: every duration setting wants a
	// positive value, and one left out is the default.
	d, err := time.ParseDuration(x)
	if err != nil || d <= 0 {
		return errors.New("want a positive duration such as 10s")
	}
	*v = durationValue(d)
	return nil
}

type intValue int

func (v *intValue) String() string {
	if *v == 0 {
		return ""
	}
	return strconv.Itoa(int(*v))
}

func (v *intValue) Set(x string) error {
	n, err := strconv.Atoi(x)
	if err != nil || n <= 0 {
		return errors.New("want a whole number, 1 or more")
	}
	*v = intValue(n)
	return nil
}

type listValue []string

func (v *listValue) String() string { return strings.Join(*v, ",") }
func (v *listValue) Set(x string) error {
	if x == "" {
		return errors.New("empty value")
	}
	*v = append(*v, x)
	return nil
}

type upstreamsValue []upstream.Settings

func (v *upstreamsValue) String() string {
	var names []string
	for _, u := range *v {
		names = append(names, u.Name)
	}
	return strings.Join(names, ",")
}

func (v *upstreamsValue) Set(x string) error {
	u, err := upstream.ParseSettings(x)
	if err != nil {
		return err
	}
	*v = append(*v, u)
	return nil
}

// watchValue is --watch or --no-watch; whichever comes last wins.
type watchValue struct {
	p      **bool
	negate bool
}

func (v *watchValue) String() string   { return "" }
func (v *watchValue) IsBoolFlag() bool { return true }
func (v *watchValue) Set(x string) error {
	b, err := strconv.ParseBool(x)
	if err != nil {
		return errors.New("want true or false")
	}
	on := b != v.negate
	*v.p = &on
	return nil
}
