package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// CapabilitiesUsage is the usage of --capabilities, shared by every
// command that compiles policies (serve, test, check, explain).
const CapabilitiesUsage = "compile policies with the OPA capabilities JSON `FILE` (default: every built-in but the network ones, http.send and net.lookup_ip_addr)"

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
// returns the Serve they parse into. It holds only what the flags set:
// defaults come from SetDefaults, and a config file merges in with Apply
// (or use LoadServe, which does it all).
func ServeFlags(fs *flag.FlagSet) *Serve {
	f := &Serve{}
	def := func(name, usage string, v flag.Value, apply func(dst *Serve)) {
		fs.Var(&setting{Value: v, apply: apply}, name, usage)
	}
	str := func(name, usage string, p func(*Serve) *string) {
		def(name, usage, (*stringValue)(p(f)), func(d *Serve) { *p(d) = *p(f) })
	}
	fs.StringVar(&f.Config, "config", "", "read settings from a YAML `FILE`; flags win over it")
	str("registry", "the registry `FILE` (default: the bundled example)", func(s *Serve) *string { return &s.Registry })
	str("policy", "the policy `DIR`ectory (default: the bundled example)", func(s *Serve) *string { return &s.Policy })
	def("stdio", "serve on stdin/stdout (HTTP then only with --http)", (*boolValue)(&f.Stdio), func(d *Serve) { d.Stdio = f.Stdio })
	str("http", "serve streamable HTTP at `ADDR`, MCP endpoint /mcp (default "+DefaultHTTP+")", func(s *Serve) *string { return &s.HTTP })
	str("as", "the caller's `SUBJECT`, for stdio (default: nobody)", func(s *Serve) *string { return &s.As })
	def("role", "a `ROLE` of the --as caller (repeatable; replaces the file's roles)", (*listValue)(&f.Roles), func(d *Serve) { d.Roles = f.Roles })
	str("tokens", "HTTP bearer tokens `FILE`, JSON or YAML (default: every HTTP caller is nobody)", func(s *Serve) *string { return &s.Tokens })
	def("upstream", "an upstream MCP server `NAME=COMMAND` or NAME=URL (repeatable; replaces the file's upstream of that name)",
		(*upstreamsValue)(&f.Upstreams), func(d *Serve) { d.Upstreams = mergeUpstreams(d.Upstreams, f.Upstreams) })
	str("ledger", "idempotency ledger `STORE`: memory, sqlite:PATH or postgres://... (default: sqlite: ledger.db in the state directory)", func(s *Serve) *string { return &s.Ledger })
	str("idempotency-key", "the _meta `KEY` whose string value is a call's idempotency key (default festi/idempotencyKey)", func(s *Serve) *string { return &s.IdempotencyKey })
	def("ledger-retention", "keep completed idempotency keys for `DURATION` (default 24h)", (*durationValue)(&f.LedgerRetention), func(d *Serve) { d.LedgerRetention = f.LedgerRetention })
	str("approval-webhook", "POST each new approval request as JSON to `URL`", func(s *Serve) *string { return &s.ApprovalWebhook })
	def("max-pending-approvals", "at most `N` approval requests pending per requester; a call needing one more is refused (default 20)", (*intValue)(&f.MaxPendingApprovals), func(d *Serve) { d.MaxPendingApprovals = f.MaxPendingApprovals })
	str("audit", "audit trail `FILE`, JSON Lines; - is stderr (default -)", func(s *Serve) *string { return &s.Audit })
	str("decision-log", "log every grant and call decision as OPA decision-log events to `URL|FILE`: an http(s) URL is POSTed gzip batches, a file gets JSON Lines", func(s *Serve) *string { return &s.DecisionLog })
	str("decision-log-hash-key", "key the decision log's hashes of argument and _meta values (HMAC-SHA256) with the key in `${VAR}|FILE`, at least 32 bytes", func(s *Serve) *string { return &s.DecisionLogHashKey })
	def("trust-traceparent", "continue the client's W3C traceparent in spans (default: a trace of toolgate's own, linked to the client's)", (*boolValue)(&f.TrustTraceparent), func(d *Serve) { d.TrustTraceparent = f.TrustTraceparent })
	str("otel-endpoint", "export OpenTelemetry traces over OTLP/HTTP to `URL` (default: $OTEL_EXPORTER_OTLP_ENDPOINT; off without either)", func(s *Serve) *string { return &s.OtelEndpoint })
	def("watch", "reload registry and policies on change (default true)", &watchValue{p: &f.Watch}, func(d *Serve) { d.Watch = f.Watch })
	def("no-watch", "do not reload registry and policies on change", &watchValue{p: &f.Watch, negate: true}, func(d *Serve) { d.Watch = f.Watch })
	def("hook-timeout", "bound one hook run to `DURATION` (default 10s)", (*durationValue)(&f.HookTimeout), func(d *Serve) { d.HookTimeout = f.HookTimeout })
	def("eval-timeout", "bound one policy evaluation to `DURATION` (default 250ms)", (*durationValue)(&f.EvalTimeout), func(d *Serve) { d.EvalTimeout = f.EvalTimeout })
	def("session-timeout", "end an HTTP session idle for `DURATION` (default 10m)", (*durationValue)(&f.SessionTimeout), func(d *Serve) { d.SessionTimeout = f.SessionTimeout })
	def("max-sessions", "at most `N` HTTP sessions at once; initialize beyond gets 503 (default 10000)", (*intValue)(&f.MaxSessions), func(d *Serve) { d.MaxSessions = f.MaxSessions })
	def("read-timeout", "an HTTP request body must arrive within `DURATION` (default 30s)", (*durationValue)(&f.ReadTimeout), func(d *Serve) { d.ReadTimeout = f.ReadTimeout })
	def("idle-timeout", "close HTTP keep-alive connections idle for `DURATION` (default 2m)", (*durationValue)(&f.IdleTimeout), func(d *Serve) { d.IdleTimeout = f.IdleTimeout })
	def("max-connections", "at most `N` open HTTP connections; at the cap the longest-idle one closes, else new ones wait (default 4096)", (*intValue)(&f.MaxConnections), func(d *Serve) { d.MaxConnections = f.MaxConnections })
	def("allowed-origin", "an `ORIGIN` accepted besides the listener's own, e.g. https://app.example.com (repeatable)", (*listValue)(&f.AllowedOrigins), func(d *Serve) { d.AllowedOrigins = f.AllowedOrigins })
	str("admin-role", "the operator `ROLE`: GET /healthz?verbose=1 and /metrics (default admin)", func(s *Serve) *string { return &s.AdminRole })
	def("pdp-role", "a `ROLE` that may ask the AuthZEN endpoints /access/v1/evaluation(s) (repeatable; replaces the file's)", (*listValue)(&f.PDPRoles), func(d *Serve) { d.PDPRoles = f.PDPRoles })
	str("shadow-policy", "decide every grant and call also with the candidate policy `DIR`, off the request path, and record the differences (docs/shadow.md)", func(s *Serve) *string { return &s.Shadow.Policy })
	str("shadow-registry", "the candidate's registry `FILE` (default: the serving registry)", func(s *Serve) *string { return &s.Shadow.Registry })
	str("shadow-bundle", "decide also with the candidate registry and policies of the OPA bundle at `URL`, kept current as --bundle is (docs/shadow.md)", func(s *Serve) *string { return &s.Shadow.Bundle })
	str("metrics-addr", "also serve /metrics, to anyone, at `ADDR`", func(s *Serve) *string { return &s.MetricsAddr })
	str("capabilities", CapabilitiesUsage, func(s *Serve) *string { return &s.Capabilities })
	str("pins", "the pins `FILE` of upstreams configured with pin: true (default: pins.yaml in the state directory)", func(s *Serve) *string { return &s.Pins })
	str("issuer", "accept JWT access tokens from the OAuth 2.1 authorization server at `URL` (docs/contract.md §12; discovery gives its keys)", func(s *Serve) *string { return &s.Auth.Issuer })
	str("jwks", "the issuer's signing keys, a JWKS `FILE` (watched) or URL, instead of discovery", func(s *Serve) *string { return &s.Auth.JWKS })
	str("resource", "this server's canonical `URI` (RFC 8707), the tokens' audience (default http://<--http address>/mcp)", func(s *Serve) *string { return &s.Auth.Resource })
	def("audience", "an accepted token audience `AUD` (repeatable; replaces the file's; default: the resource URI)", (*listValue)(&f.Auth.Audiences), func(d *Serve) { d.Auth.Audiences = f.Auth.Audiences })
	def("allow-anonymous", "with --issuer, serve a request without a token as nobody instead of answering 401", (*boolValue)(&f.AllowAnonymous), func(d *Serve) { d.AllowAnonymous = f.AllowAnonymous })
	str("bundle", bundleUsage, func(s *Serve) *string { return &s.Bundle.URL })
	str("bundle-verification-key", bundleKeyUsage, func(s *Serve) *string { return &s.Bundle.Signing.KeyFile })
	str("list-fallback", "what tools/list shows when the grant policy fails: base (the base decision) or none (nothing) (default base)", func(s *Serve) *string { return &s.ListFallback })
	return f
}

// Apply overrides s with every serve flag set on the parsed fs (fs.Visit:
// a flag left at its default changes nothing). Scalars replace; --role
// replaces the roles; --upstream replaces the upstream of the same name
// (keeping its import, section, trust_annotations and pin settings) and adds
// the others.
func (s *Serve) Apply(fs *flag.FlagSet) {
	fs.Visit(func(fl *flag.Flag) {
		if st, ok := fl.Value.(*setting); ok {
			st.apply(s)
		}
	})
}

func mergeUpstreams(file, flags []Upstream) []Upstream {
	out := append([]Upstream(nil), file...)
	for _, u := range flags {
		replaced := false
		for i := range out {
			if out[i].Name == u.Name {
				u.Import = out[i].Import
				u.Section, u.TrustAnnotations = out[i].Section, out[i].TrustAnnotations
				u.Pin, u.Prefix = out[i].Pin, out[i].Prefix
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
	return Resolve(fs, flags)
}

// Resolve is LoadServe after the flags are parsed, for commands that take
// serve's settings besides their own (toolgate pins): flags is what
// ServeFlags returned for fs.
func Resolve(fs *flag.FlagSet, flags *Serve) (*Serve, error) {
	s := &Serve{}
	if flags.Config != "" {
		var err error
		if s, err = LoadFile(flags.Config); err != nil {
			return nil, err
		}
	}
	s.Apply(fs)
	if err := s.SetDefaults(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, nameFlags(err, fs)
	}
	return s, nil
}

// nameFlags renames the problems of settings given as flags after their
// flag (`--ledger`, not the config key `ledger`): flags win over the file,
// so a set flag is where the value came from.
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
		key, _, _ := strings.Cut(p.Key, "[") // upstreams[1] (name)
		for _, name := range []string{kebab(key), kebab(strings.TrimSuffix(key, "s"))} {
			if set[name] {
				ce.Problems[i].Key = "--" + name
				break
			}
		}
	}
	return ce
}

// kebab turns a config key into flag form: hookTimeout → hook-timeout. A
// plural key's flag is singular (roles → role, upstreams → upstream,
// allowedOrigins → allowed-origin): nameFlags tries both.
func kebab(key string) string {
	var b strings.Builder
	for _, r := range key {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
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

type upstreamsValue []Upstream

func (v *upstreamsValue) String() string {
	var names []string
	for _, u := range *v {
		names = append(names, u.Name)
	}
	return strings.Join(names, ",")
}

func (v *upstreamsValue) Set(x string) error {
	u, err := parseUpstream(x)
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
