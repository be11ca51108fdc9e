package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/pins"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/servesettings"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tracing"
	"github.com/toolgate/toolgate/upstream"
)

// DefaultHTTP is where `toolgate serve` listens unless told otherwise.
const DefaultHTTP = "127.0.0.1:8787"

// Serve holds every setting of `toolgate serve` (docs/contract.md §8). The zero value
// means "not set"; SetDefaults fills in the defaults. Settings lists each
// field's config key, flag and default: the fields carry no tags, the
// table is where a setting is named.
type Serve struct {
	// Config is the file the settings were read from; "" without one.
	// Relative paths in it are resolved against its directory.
	Config string

	// Registry is the registry file; "" serves the bundled example.
	Registry string
	// Policy is the policy directory; "" serves the bundled example.
	Policy string
	// Bundle, when its URL is set, serves registry and policies from an
	// OPA bundle instead (docs/contract.md §14).
	Bundle bundle.Config
	// Stdio serves on stdin/stdout.
	Stdio bool
	// HTTP is the address to serve streamable HTTP at. SetDefaults sets
	// DefaultHTTP unless Stdio is set: with Stdio, HTTP is served only when
	// an address is given.
	HTTP string
	// As and Roles are the caller over stdio; As "" is nobody.
	As    string
	Roles []string
	// Tokens is the bearer tokens file for HTTP; "": every HTTP caller is
	// nobody.
	Tokens string
	// Upstreams are the upstream MCP servers.
	Upstreams []upstream.Settings
	// Ledger is the idempotency ledger store: "memory", "sqlite:PATH" or a
	// postgres:// URL. SetDefaults sets "sqlite:" with ledger.db in
	// StateDir ("sqlite:" with no path means that file too).
	Ledger string
	// LedgerRetention is how long the ledger keeps a completed key; zero is
	// the ledger's default (24h).
	LedgerRetention time.Duration
	// IdempotencyKey is the _meta key the idempotency ledger reads; empty
	// is ledger.DefaultMetaKey, festi/idempotencyKey.
	IdempotencyKey string
	// Audit is the audit trail file; "-" (the default) is stderr.
	Audit string
	// DecisionLog is the decision log's settings (docs/contract.md §14):
	// where every grant and call decision goes, and the key of the hashes
	// in its events (a "${NAME}" or a file, relative to the config file).
	DecisionLog decisionlog.Settings
	// Tracing is tracing's settings (docs/contract.md §14): the OTLP/HTTP
	// endpoint spans are exported to, and whether a client's W3C
	// traceparent is continued.
	Tracing tracing.Settings
	// Approvals is the approval gate's settings (docs/contract.md §13):
	// its webhook and the bound on pending requests.
	Approvals servesettings.Approvals
	// Watch reloads registry and policies on change; nil is on.
	Watch *bool
	// HookTimeout bounds one hook run; zero is the adapter's default.
	HookTimeout time.Duration
	// EvalTimeout bounds one policy evaluation; zero is the engine's default.
	EvalTimeout time.Duration

	// HTTPServer is the HTTP server's settings (docs/contract.md §11): its
	// limits, the accepted origins, the operator role and the metrics
	// address; zero is httpserve's default.
	HTTPServer servesettings.HTTP
	// PDPRoles are the roles that may ask the AuthZEN endpoints
	// (docs/authzen.md); empty: the endpoints are not served.
	PDPRoles []string
	// Shadow is the candidate policy decided beside the serving one
	// (docs/shadow.md); zero: none.
	Shadow servesettings.Shadow

	// Capabilities is an OPA capabilities JSON file: the built-ins policies
	// may call (docs/contract.md §11); "" is every built-in but the network ones.
	Capabilities string
	// ListFallback is what tools/list shows when the grant policy fails
	// (docs/contract.md §6): ListFallbackBase ("", the default) or ListFallbackNone.
	ListFallback string

	// Auth configures JWT callers from an OAuth 2.1 authorization server
	// (docs/contract.md §12; the config file's auth section, --issuer, --jwks,
	// --resource, --audience). Its defaults depend on the address
	// listened at: the gateway fills them in with Auth.WithDefaults.
	Auth identity.Settings
	// AllowAnonymous serves a request without a token as nobody even with
	// Auth enabled (--allow-anonymous, auth.allow_anonymous).
	AllowAnonymous bool
	// Pins is the pins file of the upstreams configured with pin (docs/contract.md
	// §15); "" is PinsFileName in StateDir (see PinsFile).
	Pins string
}

// PinsFileName is the pins file's name in the state directory.
const PinsFileName = pins.FileName

// PinsFile is the pins file: Pins, else pins.yaml in StateDir, beside the
// default ledger.
func (s *Serve) PinsFile() (string, error) {
	if s.Pins != "" {
		return s.Pins, nil
	}
	dir, err := StateDir()
	if err != nil {
		return "", fmt.Errorf("pins: %w", err)
	}
	return filepath.Join(dir, PinsFileName), nil
}

// The values of Serve.ListFallback.
const (
	ListFallbackBase = "base" // a failing policy lists the base decision
	ListFallbackNone = "none" // a failing policy lists nothing
)

// PoolConfigs maps the upstream settings to the pool's configuration.
func PoolConfigs(ups []upstream.Settings) []upstream.Config {
	out := make([]upstream.Config, len(ups))
	for i, u := range ups {
		out[i] = u.PoolConfig()
	}
	return out
}

// WatchOn reports whether registry and policies are watched.
func (s *Serve) WatchOn() bool { return s.Watch == nil || *s.Watch }

func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// StateDir is toolgate's state directory: $XDG_STATE_HOME/toolgate, or
// ~/.local/state/toolgate when XDG_STATE_HOME is unset or not absolute. It
// may not exist yet.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "toolgate"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "toolgate"), nil
}

// SetDefaults fills in what is not set: HTTP (unless Stdio), Audit
// DefaultAudit, Ledger sqlite:StateDir/ledger.db, Watch on. It fails only
// when the ledger defaults and no state directory can be found.
func (s *Serve) SetDefaults() error {
	if s.HTTP == "" && !s.Stdio {
		s.HTTP = DefaultHTTP
	}
	if s.Audit == "" {
		s.Audit = DefaultAudit
	}
	if s.Watch == nil {
		on := defaultWatch
		s.Watch = &on
	}
	spec, err := store.ParseStore(cmp.Or(s.Ledger, defaultLedger))
	if err != nil {
		return nil // Validate reports it
	}
	if spec, err = inStateDir(spec); err != nil {
		return err
	}
	s.Ledger = spec.String()
	return nil
}

// LedgerFileName is the default ledger's file in the state directory.
const LedgerFileName = "ledger.db"

// defaultLedger is the ledger when none is set: a SQLite file, whose path
// inStateDir fills in.
const defaultLedger = store.KindSQLite + ":"

// LedgerStore is the ledger's store (Ledger, read by ParseLedger).
func (s *Serve) LedgerStore() (store.StoreSpec, error) { return ParseLedger(s.Ledger) }

// ParseLedger reads a ledger value (serve's ledger, --ledger) as
// store.ParseStore does, with serve's default: "" and "sqlite:" with no
// path are LedgerFileName in StateDir.
func ParseLedger(v string) (store.StoreSpec, error) {
	spec, err := store.ParseStore(cmp.Or(v, defaultLedger))
	if err != nil {
		return spec, err
	}
	return inStateDir(spec)
}

// inStateDir makes a SQLite store without a path LedgerFileName in
// StateDir.
func inStateDir(spec store.StoreSpec) (store.StoreSpec, error) {
	if spec.Kind == store.KindSQLite && spec.Path == "" {
		dir, err := StateDir()
		if err != nil {
			return spec, err
		}
		spec.Path = filepath.Join(dir, LedgerFileName)
	}
	return spec, nil
}

// Validate reports every setting that cannot be served, in one *Error:
// each component's checks (validators) in turn.
func (s *Serve) Validate() error {
	var probs []Problem
	for _, check := range validators {
		probs = append(probs, check(s)...)
	}
	if len(probs) > 0 {
		return &Error{Path: s.Config, Problems: probs}
	}
	return nil
}

// validators check the settings each component owns, in the order
// Validate reports them; the table (Settings) checks the kinds.
var validators = []func(*Serve) []Problem{
	(*Serve).callerProblems,
	(*Serve).shadowProblems,
	(*Serve).ledgerProblems,
	(*Serve).negatives,
	(*Serve).observeProblems,
	(*Serve).servingProblems,
	(*Serve).upstreamsProblems,
	(*Serve).authProblems,
	(*Serve).bundleProblems,
}

// problem is one Problem without a line (a setting, not a place in the file).
func problem(key, format string, args ...any) Problem {
	return Problem{Key: key, Message: fmt.Sprintf(format, args...)}
}

// callerProblems: the stdio caller (as, roles).
func (s *Serve) callerProblems() []Problem {
	var probs []Problem
	if len(s.Roles) > 0 && s.As == "" {
		probs = append(probs, problem("roles", "roles are given without a subject (as)"))
	}
	for _, r := range s.Roles {
		if r == "" {
			probs = append(probs, problem("roles", "a role is empty"))
		}
	}
	return probs
}

// ledgerProblems: the ledger's store, as the ledger reads it.
func (s *Serve) ledgerProblems() []Problem {
	if s.Ledger == "" {
		return nil
	}
	if _, err := store.ParseStore(s.Ledger); err != nil {
		return []Problem{problem("ledger", "%v", err)}
	}
	return nil
}

// observeProblems: decision log, its hash key, traces.
func (s *Serve) observeProblems() []Problem {
	var probs []Problem
	dl := s.DecisionLog
	if err := decisionlog.CheckTarget(dl.Target); err != nil {
		probs = append(probs, problem("decision_log", "%v", err))
	}
	if dl.HashKey != "" {
		if dl.Target == "" {
			probs = append(probs, problem("decision_log_hash_key", "needs decision_log (--decision-log)"))
		} else if _, err := dl.ReadHashKey(); err != nil {
			probs = append(probs, problem("decision_log_hash_key", "%v", err))
		}
	}
	if dl.HistoryEntries && dl.Target == "" {
		probs = append(probs, problem("decision_log_history_entries", "needs decision_log (--decision-log)"))
	}
	if err := s.Tracing.Validate(); err != nil {
		probs = append(probs, problem("otel_endpoint", "%v", err))
	}
	return probs
}

// servingProblems: the approval webhook, the listing fallback, the
// accepted origins.
func (s *Serve) servingProblems() []Problem {
	var probs []Problem
	if err := s.Approvals.Validate(); err != nil {
		probs = append(probs, problem("approval_webhook", "%v", err))
	}
	switch s.ListFallback {
	case "", ListFallbackBase, ListFallbackNone:
	default:
		probs = append(probs, problem("list_fallback", "want base or none, got %q", s.ListFallback))
	}
	for _, o := range s.HTTPServer.BadOrigins() {
		probs = append(probs, problem("allowed_origins", "want an origin such as https://app.example.com, got %q", o))
	}
	return probs
}

// upstreamsProblems: each upstream (problems), and names used once.
func (s *Serve) upstreamsProblems() []Problem {
	var probs []Problem
	seen := map[string]bool{}
	for i, u := range s.Upstreams {
		key := fmt.Sprintf("upstreams[%d]", i)
		if u.Name != "" {
			key += " (" + u.Name + ")"
		}
		if seen[u.Name] && upstream.SettingsName.MatchString(u.Name) {
			probs = append(probs, problem(key, "name is used twice"))
		}
		seen[u.Name] = true
		for _, msg := range u.Problems() {
			probs = append(probs, problem(key, "%s", msg))
		}
	}
	return probs
}

// negatives are the durations and counts set below zero (a Serve built in
// Go: the file and the flags refuse zero and less), in table order.
func (s *Serve) negatives() []Problem {
	var probs []Problem
	for _, st := range settings {
		if st.Key == "" || st.field == nil {
			continue
		}
		switch p := st.field(s).(type) {
		case *time.Duration:
			if *p < 0 {
				probs = append(probs, Problem{Key: st.Key, Message: fmt.Sprintf("negative duration %s", *p)})
			}
		case *int:
			if *p < 0 {
				probs = append(probs, Problem{Key: st.Key, Message: fmt.Sprintf("negative number %d", *p)})
			}
		}
	}
	return probs
}

// authProblems validates Auth with its defaults for the HTTP address.
func (s *Serve) authProblems() []Problem {
	var probs []Problem
	if !s.Auth.Enabled() && s.AllowAnonymous {
		probs = append(probs, Problem{Key: "auth.allow_anonymous", Message: "needs auth.issuer (--issuer): without it a request without a token is nobody anyway"})
	}
	if s.Auth.Enabled() && s.HTTP == "" {
		probs = append(probs, Problem{Key: "auth", Message: "JWT callers are for HTTP: give an address (http, --http)"})
	}
	if s.Auth.Enabled() && s.Auth.Resource == "" && isWildcard(s.HTTP) {
		probs = append(probs, Problem{Key: "auth.resource", Message: "required when listening on every address (http " + s.HTTP +
			"): the default would advertise " + identity.DefaultResource(s.HTTP) + " as this server's URI; set it (--resource) to the URI clients use"})
	}
	a := s.Auth
	if a.Enabled() {
		addr := s.HTTP
		if addr == "" {
			addr = DefaultHTTP // reported above; check the rest
		}
		a = a.WithDefaults(addr)
	}
	if err := a.Validate(); err != nil {
		var se *identity.SettingsError
		if !errors.As(err, &se) {
			return append(probs, Problem{Key: "auth", Message: err.Error()})
		}
		for _, p := range se.Problems {
			probs = append(probs, Problem{Message: p}) // each names its key
		}
	}
	return probs
}

// isWildcard reports whether addr listens on every address: no host, or
// an unspecified IP (0.0.0.0, ::).
func isWildcard(addr string) bool {
	if addr == "" {
		return false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// Problem is one setting that is wrong.
type Problem struct {
	// Line is the line in the config file (0: not from the file).
	Line int
	// Key names the setting (for example "ledger", "upstreams[1]").
	Key     string
	Message string
}

// String renders p as `line 3: watch: want true or false`, leaving out
// what is unknown.
func (p Problem) String() string { return p.Diag("").LineString() }

// Error reports every problem of a configuration.
type Error struct {
	// Path is the config file; "" for settings from flags alone.
	Path     string
	Problems []Problem
	// Err is a failure to read or parse the file as a whole.
	Err error
}

// Error renders `config <path>: <failure>` (or the lone problem) on the
// first line and every other problem on a line of its own below it, through
// [Error.List].
func (e *Error) Error() string { return e.List().Error() }

func (e *Error) Unwrap() error { return e.Err }
