package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	"github.com/toolgate/toolgate/internal/servesettings"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/upstream"
)

// Setting is one setting of `toolgate serve`: its key in the config file,
// its flag, its default and what it does. [Settings] lists every one; the
// flags (ServeFlags), the config file's decoding (LoadFile) and the
// settings reference (docs/settings.md) are made from that list, so a
// setting is declared there and nowhere else. The value itself belongs to
// a component (httpserve, the ledger, the engine, identity, bundle ...):
// its default is that component's constant, and the component validates
// what it owns.
type Setting struct {
	// Key is the config file's key, snake_case; a key of a section is
	// dotted (auth.issuer). "" for a flag with no key (--config, --no-watch).
	Key string
	// Old is the camelCase key this one had: still read, for one release,
	// with a warning naming the new key.
	Old string
	// Flag is the flag's name without dashes; "" for a key only the file
	// sets.
	Flag string
	// Usage says what the setting does; a word in backquotes is the flag's
	// argument (FILE, DURATION ...).
	Usage string
	// Notes follow the usage in the flag's parentheses (repeatable ...).
	Notes string
	// Default is the default value, when there is one; Unset says what no
	// value means otherwise. At most one of them is set.
	Default string
	Unset   string
	// Want is what a value in the file must be, for its error; a key of
	// an entry (upstreams.name) has none: its error says "wrong kind of
	// value".
	Want string

	// field points at the setting's value in a Serve: *string, *bool,
	// **bool, *time.Duration, *int, **int64, *[]string or *[]upstream.Settings.
	field func(*Serve) any
	// entry points at the value of a setting of one entry of a list
	// (upstreams.name): *string, **string, *bool, *[]string,
	// *map[string]string, *map[string][]string, or the section's value
	// (upstreams.auth).
	entry func(*upstream.Settings) any
	// section marks a mapping of the settings whose keys start with
	// Key+".", read like the top level; list, a list of such mappings
	// (upstreams, whose entries may also be NAME=COMMAND|URL).
	section bool
	list    bool
	// loose reads a list as YAML decodes it: any scalars, empty ones too
	// (an upstream's args).
	loose bool
	// nonEmpty refuses "" in the file; oneOf, any value but these.
	nonEmpty bool
	oneOf    []string
	// negate makes a bool flag set the opposite (--no-watch).
	negate bool
	// merge is how a set flag overrides the file's value; nil replaces it.
	merge func(dst, flags *Serve)
}

// fmtDuration writes a default duration as people write it: 10m, not 10m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// DefaultAudit is the audit trail when none is set: stderr.
const DefaultAudit = "-"

// defaultWatch is whether registry and policies are watched when Watch is
// not set.
const defaultWatch = true

// settings is every setting of `toolgate serve`, in the order of the config
// file's documentation (docs/contract.md §8). Settings returns a copy.
var settings = []Setting{
	{Flag: "config", Usage: "read settings from a YAML `FILE`; flags win over it", field: func(s *Serve) any { return &s.Config }},
	{Key: "registry", Flag: "registry", Usage: "the registry `FILE`", Unset: "the bundled example", Want: "a file path",
		field: func(s *Serve) any { return &s.Registry }},
	{Key: "policy", Flag: "policy", Usage: "the policy `DIR`ectory", Unset: "the bundled example", Want: "a directory path",
		field: func(s *Serve) any { return &s.Policy }},
	{Key: "stdio", Flag: "stdio", Usage: "serve on stdin/stdout (HTTP then only with --http)", Want: "true or false",
		field: func(s *Serve) any { return &s.Stdio }},
	{Key: "http", Flag: "http", Usage: "serve streamable HTTP at `ADDR`, MCP endpoint /mcp", Default: DefaultHTTP, Want: "an address such as 127.0.0.1:8787",
		field: func(s *Serve) any { return &s.HTTP }},
	{Key: "as", Flag: "as", Usage: "the caller's `SUBJECT`, for stdio", Unset: "nobody", Want: "a subject (string)",
		field: func(s *Serve) any { return &s.As }},
	{Key: "roles", Flag: "role", Usage: "a `ROLE` of the --as caller", Notes: "repeatable; replaces the file's roles", Want: "a list of role names",
		field: func(s *Serve) any { return &s.Roles }},
	{Key: "tokens", Flag: "tokens", Usage: "HTTP bearer tokens `FILE`, JSON or YAML", Unset: "every HTTP caller is nobody", Want: "a file path",
		field: func(s *Serve) any { return &s.Tokens }},
	{Key: "upstreams", Flag: "upstream", Usage: "an upstream MCP server `NAME=COMMAND` or NAME=URL", Notes: "repeatable; replaces the file's upstream of that name",
		Want: "a list of upstreams", field: func(s *Serve) any { return &s.Upstreams }, list: true,
		merge: func(d, f *Serve) { d.Upstreams = mergeUpstreams(d.Upstreams, f.Upstreams) }},
	{Key: "upstreams.name", Usage: "how rows name the upstream: method upstream:NAME/TOOL, imported tools NAME.TOOL",
		entry: func(u *upstream.Settings) any { return &u.Name }},
	{Key: "upstreams.command", Usage: "the command line of a stdio upstream, split into words as a shell splits them, without expansion",
		entry: func(u *upstream.Settings) any { return &u.Command }},
	{Key: "upstreams.args", Usage: "further arguments of the command, taken as they are", loose: true,
		entry: func(u *upstream.Settings) any { return &u.Args }},
	{Key: "upstreams.url", Usage: "the endpoint of a streamable HTTP upstream (http or https); may hold ${VAR} or ${file:PATH}, a key in its query say; logged without its query and user information",
		entry: func(u *upstream.Settings) any { return &u.URL }},
	{Key: "upstreams.import", Usage: "make the upstream's tools that no row names rows of their own", Unset: "off",
		entry: func(u *upstream.Settings) any { return &u.Import }},
	{Key: "upstreams.section", Usage: "the permission section of the imported rows", Unset: "upstream:NAME, which no role holds until the registry's sections list it", nonEmpty: true,
		entry: func(u *upstream.Settings) any { return &u.Section }},
	{Key: "upstreams.trust_annotations", Usage: "let the upstream's tool annotations count as the imported rows' annotations", Unset: "off (policies see them as upstream_annotations)",
		entry: func(u *upstream.Settings) any { return &u.TrustAnnotations }},
	{Key: "upstreams.pin", Usage: "serve an imported tool only while its definition matches the pin recorded in the pins file; needs import", Unset: "off",
		entry: func(u *upstream.Settings) any { return &u.Pin }},
	{Key: "upstreams.prefix", Usage: "prepended to the names of the imported tools and prompts; may be empty", Unset: "NAME.",
		entry: func(u *upstream.Settings) any { return &u.Prefix }},
	{Key: "upstreams.remember", Usage: "TOOL: [ARG, ...]: the arguments an imported tool's calls leave in the caller's history (registry history)", Unset: "none",
		entry: func(u *upstream.Settings) any { return &u.Remember }},
	{Key: "upstreams.headers", Usage: "headers sent with every request to an HTTP upstream; values may be ${VAR} or ${file:PATH}",
		entry: func(u *upstream.Settings) any { return &u.Headers }},
	{Key: "upstreams.env", Usage: "a stdio upstream's environment besides PATH, HOME, LANG, TZ and TMPDIR; values may be ${VAR} or ${file:PATH}",
		entry: func(u *upstream.Settings) any { return &u.Env }},
	{Key: "upstreams.inherit_env", Usage: "give a stdio upstream all of toolgate's environment", Unset: "off",
		entry: func(u *upstream.Settings) any { return &u.InheritEnv }},
	{Key: "upstreams.timeout", Usage: "how long toolgate waits for the upstream to start and answer initialize (listings wait as long); then it retries in the background",
		Default: fmtDuration(upstream.DefaultConnectTimeout),
		entry:   func(u *upstream.Settings) any { return &u.Timeout }},
	{Key: "upstreams.auth", Usage: "OAuth toward an HTTP upstream (docs/contract.md §17)", section: true,
		entry: func(u *upstream.Settings) any { u.Auth = &upstream.Auth{}; return &u.Auth }},
	{Key: "upstreams.auth.type", Usage: "the grant: client_credentials (one token for the upstream) or token_exchange (one token per caller, for its access token)",
		entry: func(u *upstream.Settings) any { return &u.Auth.Type }},
	{Key: "upstreams.auth.token_url", Usage: "the authorization server's token endpoint",
		entry: func(u *upstream.Settings) any { return &u.Auth.TokenURL }},
	{Key: "upstreams.auth.client_id", Usage: "toolgate's client id at the authorization server",
		entry: func(u *upstream.Settings) any { return &u.Auth.ClientID }},
	{Key: "upstreams.auth.client_secret", Usage: "toolgate's client secret, ${VAR} or ${file:PATH}",
		entry: func(u *upstream.Settings) any { return &u.Auth.ClientSecret }},
	{Key: "upstreams.auth.scopes", Usage: "the scopes asked for", Unset: "the authorization server's default",
		entry: func(u *upstream.Settings) any { return &u.Auth.Scopes }},
	{Key: "upstreams.auth.resource", Usage: "the upstream's URI (RFC 8707), naming it to the authorization server; token_exchange needs it or audience",
		entry: func(u *upstream.Settings) any { return &u.Auth.Resource }},
	{Key: "upstreams.auth.audience", Usage: "the upstream's name at the authorization server; token_exchange needs it or resource",
		entry: func(u *upstream.Settings) any { return &u.Auth.Audience }},
	{Key: "ledger", Flag: "ledger", Usage: "idempotency ledger `STORE`: memory, sqlite:PATH or postgres://...", Unset: "sqlite: " + LedgerFileName + " in the state directory",
		Want: "memory, sqlite:PATH or postgres://...", field: func(s *Serve) any { return &s.Ledger }},
	{Key: "ledger_retention", Old: "ledgerRetention", Flag: "ledger-retention", Usage: "keep completed idempotency keys for `DURATION`",
		Default: fmtDuration(ledger.DefaultRetention), Want: "a positive duration such as 24h", field: func(s *Serve) any { return &s.LedgerRetention }},
	{Key: "audit", Flag: "audit", Usage: "audit trail `FILE`, JSON Lines; - is stderr", Default: DefaultAudit, Want: "a file path or -",
		field: func(s *Serve) any { return &s.Audit }},
	{Key: "watch", Flag: "watch", Usage: "reload registry and policies on change", Default: strconv.FormatBool(defaultWatch), Want: "true or false",
		field: func(s *Serve) any { return &s.Watch }},
	{Flag: "no-watch", Usage: "do not reload registry and policies on change", negate: true, field: func(s *Serve) any { return &s.Watch }},
	{Key: "hook_timeout", Old: "hookTimeout", Flag: "hook-timeout", Usage: "bound one hook run to `DURATION`", Default: fmtDuration(mcpadapter.DefaultHookTimeout),
		Want: "a positive duration such as 10s", field: func(s *Serve) any { return &s.HookTimeout }},
	{Key: "eval_timeout", Old: "evalTimeout", Flag: "eval-timeout", Usage: "bound one policy evaluation to `DURATION`", Default: fmtDuration(engine.DefaultTimeout),
		Want: "a positive duration such as 250ms", field: func(s *Serve) any { return &s.EvalTimeout }},
	{Key: "session_timeout", Old: "sessionTimeout", Flag: "session-timeout", Usage: "end an HTTP session idle for `DURATION`",
		Default: fmtDuration(servesettings.DefaultSessionTimeout), Want: "a positive duration such as 10m", field: func(s *Serve) any { return &s.HTTPServer.SessionTimeout }},
	{Key: "max_sessions", Old: "maxSessions", Flag: "max-sessions", Usage: "at most `N` HTTP sessions at once; initialize beyond gets 503",
		Default: strconv.Itoa(servesettings.DefaultMaxSessions), Want: "a whole number, 1 or more", field: func(s *Serve) any { return &s.HTTPServer.MaxSessions }},
	{Key: "read_timeout", Old: "readTimeout", Flag: "read-timeout", Usage: "an HTTP request body must arrive within `DURATION`",
		Default: fmtDuration(servesettings.DefaultReadTimeout), Want: "a positive duration such as 30s", field: func(s *Serve) any { return &s.HTTPServer.ReadTimeout }},
	{Key: "idle_timeout", Old: "idleTimeout", Flag: "idle-timeout", Usage: "close HTTP keep-alive connections idle for `DURATION`",
		Default: fmtDuration(servesettings.DefaultIdleTimeout), Want: "a positive duration such as 2m", field: func(s *Serve) any { return &s.HTTPServer.IdleTimeout }},
	{Key: "max_connections", Old: "maxConnections", Flag: "max-connections", Usage: "at most `N` open HTTP connections; at the cap the longest-idle one closes, else new ones wait",
		Default: strconv.Itoa(servesettings.DefaultMaxConnections), Want: "a whole number, 1 or more", field: func(s *Serve) any { return &s.HTTPServer.MaxConnections }},
	{Key: "allowed_origins", Old: "allowedOrigins", Flag: "allowed-origin", Usage: "an `ORIGIN` accepted besides the listener's own, e.g. https://app.example.com",
		Notes: "repeatable", Want: "a list of origins", field: func(s *Serve) any { return &s.HTTPServer.AllowedOrigins }},
	{Key: "admin_role", Old: "adminRole", Flag: "admin-role", Usage: "the operator `ROLE`: GET /healthz?verbose=1 and /metrics", Default: servesettings.DefaultAdminRole,
		Want: "a role name", field: func(s *Serve) any { return &s.HTTPServer.AdminRole }},
	{Key: "metrics_addr", Old: "metricsAddr", Flag: "metrics-addr", Usage: "also serve /metrics, to anyone, at `ADDR`", Want: "an address such as 127.0.0.1:9090",
		field: func(s *Serve) any { return &s.HTTPServer.MetricsAddr }},
	{Key: "capabilities", Flag: "capabilities", Usage: "compile policies with the OPA capabilities JSON `FILE`",
		Unset: "every built-in but the network ones, http.send and net.lookup_ip_addr", Want: "a file path", field: func(s *Serve) any { return &s.Capabilities }},
	{Key: "list_fallback", Old: "listFallback", Flag: "list-fallback", Usage: "what tools/list shows when the grant policy fails: base (the base decision) or none (nothing)",
		Default: ListFallbackBase, Want: "base or none", field: func(s *Serve) any { return &s.ListFallback }},
	{Key: "pins", Flag: "pins", Usage: "the pins `FILE` of upstreams configured with pin: true", Unset: PinsFileName + " in the state directory", Want: "a file path",
		field: func(s *Serve) any { return &s.Pins }},
	{Key: "decision_log", Old: "decisionLog", Flag: "decision-log",
		Usage: "log every grant and call decision as OPA decision-log events to `URL|FILE`: an http(s) URL is POSTed gzip batches, a file gets JSON Lines",
		Want:  "a URL or a file path", field: func(s *Serve) any { return &s.DecisionLog.Target }},
	{Key: "otel_endpoint", Old: "otelEndpoint", Flag: "otel-endpoint", Usage: "export OpenTelemetry traces over OTLP/HTTP to `URL`",
		Unset: "$OTEL_EXPORTER_OTLP_ENDPOINT; off without either", Want: "an http(s) URL", field: func(s *Serve) any { return &s.Tracing.Endpoint }},
	{Key: "auth", Usage: "JWT callers from an OAuth 2.1 authorization server (docs/contract.md §12)", section: true},
	{Key: "auth.issuer", Flag: "issuer", Usage: "accept JWT access tokens from the OAuth 2.1 authorization server at `URL` (docs/contract.md §12; discovery gives its keys)",
		Want: "a URL such as https://login.example.com/realms/acme", field: func(s *Serve) any { return &s.Auth.Issuer }},
	{Key: "auth.jwks", Flag: "jwks", Usage: "the issuer's signing keys, a JWKS `FILE` (watched) or URL, instead of discovery",
		Want: "a file path or an https URL", field: func(s *Serve) any { return &s.Auth.JWKS }},
	{Key: "auth.resource", Flag: "resource", Usage: "this server's canonical `URI` (RFC 8707), the tokens' audience", Default: "http://<--http address>/mcp",
		Want: "a URI such as https://tools.example.com/mcp", field: func(s *Serve) any { return &s.Auth.Resource }},
	{Key: "auth.audiences", Flag: "audience", Usage: "an accepted token audience `AUD`", Notes: "repeatable; replaces the file's", Unset: "the resource URI",
		Want: "a list of audiences", field: func(s *Serve) any { return &s.Auth.Audiences }},
	{Key: "auth.subject_claim", Usage: "where the subject comes from: a dotted claim path", Default: identity.DefaultSubjectClaim, Want: "a claim path such as sub", nonEmpty: true,
		field: func(s *Serve) any { return &s.Auth.SubjectClaim }},
	{Key: "auth.roles_claim", Usage: "where the roles come from: a dotted claim path (an array of strings or a space-separated string)", Default: identity.DefaultRolesClaim,
		Want: "a claim path such as realm_access.roles", nonEmpty: true, field: func(s *Serve) any { return &s.Auth.RolesClaim }},
	{Key: "auth.scopes_supported", Usage: "the scopes published in the protected resource metadata", Want: "a list of scopes",
		field: func(s *Serve) any { return &s.Auth.ScopesSupported }},
	{Key: "auth.allow_anonymous", Flag: "allow-anonymous", Usage: "with --issuer, serve a request without a token as nobody instead of answering 401",
		Want: "true or false", field: func(s *Serve) any { return &s.AllowAnonymous }},
	{Key: "bundle", Flag: "bundle",
		Usage:   "serve the registry and policies of the OPA bundle at `URL` (http(s)://, or oci://REGISTRY/REPOSITORY:TAG for an OCI registry), polled with ETags (docs/contract.md §14)",
		section: true, field: func(s *Serve) any { return &s.Bundle.URL }},
	{Key: "bundle.url", Usage: "the bundle's URL, as --bundle gives it", Want: "an http(s) URL of a bundle, or oci://REGISTRY/REPOSITORY:TAG",
		field: func(s *Serve) any { return &s.Bundle.URL }},
	{Key: "bundle.type", Usage: "the service's type: " + bundle.TypeHTTP + " (a bundle server) or " + bundle.TypeOCI + " (an OCI registry)", Unset: "oci for an oci:// URL, else " + bundle.TypeHTTP,
		Want: fmt.Sprintf("%q (a bundle server) or %q (an OCI registry)", bundle.TypeHTTP, bundle.TypeOCI), oneOf: []string{bundle.TypeHTTP, bundle.TypeOCI},
		field: func(s *Serve) any { return &s.Bundle.Type }},
	{Key: "bundle.credentials", Usage: "how the downloads authenticate, as OPA's service credentials", section: true},
	{Key: "bundle.credentials.bearer", Usage: "send a token read from a file on every request", section: true},
	{Key: "bundle.credentials.bearer.token_path", Usage: "the file holding the token, read on every request", Want: "a file path (the token)",
		field: func(s *Serve) any { return &s.Bundle.Credentials.Bearer.TokenPath }},
	{Key: "bundle.credentials.bearer.scheme", Usage: "the Authorization header's scheme", Unset: "Bearer", Want: "an authorization scheme such as Bearer",
		field: func(s *Serve) any { return &s.Bundle.Credentials.Bearer.Scheme }},
	{Key: "bundle.polling", Usage: "a jittered delay between polls, in seconds; set both or neither", section: true},
	{Key: "bundle.polling.min_delay_seconds", Usage: "the shortest delay between polls", Unset: "OPA's", Want: "a whole number of seconds, 1 or more",
		field: func(s *Serve) any { return &s.Bundle.Polling.MinDelaySeconds }},
	{Key: "bundle.polling.max_delay_seconds", Usage: "the longest delay between polls", Unset: "OPA's", Want: "a whole number of seconds, 1 or more",
		field: func(s *Serve) any { return &s.Bundle.Polling.MaxDelaySeconds }},
	{Key: "bundle.signing", Usage: "verify signed bundles; with a key, a bundle without a valid signature is refused", section: true},
	{Key: "bundle.signing.key_file", Flag: "bundle-verification-key",
		Usage: "verify the bundle's signature with the PEM public key in `FILE`; unsigned or badly signed bundles are refused",
		Want:  "a file path (PEM public key)", field: func(s *Serve) any { return &s.Bundle.Signing.KeyFile }},
	{Key: "bundle.signing.keyid", Usage: "the key's id as the signature names it", Default: bundle.DefaultKeyID, Want: "a key id",
		field: func(s *Serve) any { return &s.Bundle.Signing.KeyID }},
	{Key: "bundle.signing.algorithm", Usage: "the signing algorithm", Default: bundle.DefaultAlgorithm, Want: "an algorithm such as RS256",
		field: func(s *Serve) any { return &s.Bundle.Signing.Algorithm }},
	{Key: "bundle.signing.scope", Usage: "the scope claim the signature must have", Want: "a scope",
		field: func(s *Serve) any { return &s.Bundle.Signing.Scope }},
	{Key: "bundle.signing.exclude_files", Usage: "files of the bundle the signature does not cover", Want: "a list of file names",
		field: func(s *Serve) any { return &s.Bundle.Signing.ExcludeFiles }},
	{Key: "bundle.refuse_older_revisions", Usage: "refuse a bundle whose revision is older than the serving one's, as a badly signed one", Unset: "off: it activates, logged and counted",
		Want: "true or false", field: func(s *Serve) any { return &s.Bundle.RefuseOlderRevisions }},
	{Key: "idempotency_key", Old: "idempotencyKey", Flag: "idempotency-key", Usage: "the _meta `KEY` whose string value is a call's idempotency key",
		Default: ledger.DefaultMetaKey, Want: "a _meta key (a non-empty string)", nonEmpty: true, field: func(s *Serve) any { return &s.IdempotencyKey }},
	{Key: "decision_log_hash_key", Old: "decisionLogHashKey", Flag: "decision-log-hash-key",
		Usage: "key the decision log's hashes of argument and _meta values (HMAC-SHA256) with the key in `${VAR}|FILE`, at least 32 bytes",
		Want:  "${ENV_VAR} or a file path", field: func(s *Serve) any { return &s.DecisionLog.HashKey }},
	{Key: "decision_log_history_entries", Flag: "decision-log-history-entries",
		Usage: "write the caller's history entries a decision read into its decision-log event, not only their count and hash", Unset: "off",
		Want: "true or false", field: func(s *Serve) any { return &s.DecisionLog.HistoryEntries }},
	{Key: "trust_traceparent", Old: "trustTraceparent", Flag: "trust-traceparent", Usage: "continue the client's W3C traceparent in spans",
		Unset: "a trace of toolgate's own, linked to the client's", Want: "true or false", field: func(s *Serve) any { return &s.Tracing.TrustTraceparent }},
	{Key: "pdp_roles", Old: "pdpRoles", Flag: "pdp-role", Usage: "a `ROLE` that may ask the AuthZEN endpoints /access/v1/evaluation(s)", Notes: "repeatable; replaces the file's",
		Want: "a list of role names", field: func(s *Serve) any { return &s.PDPRoles }},
	{Key: "shadow", Usage: "a candidate policy decided beside the serving one (docs/shadow.md)", section: true},
	{Key: "shadow.policy", Flag: "shadow-policy",
		Usage: "decide every grant and call also with the candidate policy `DIR`, off the request path, and record the differences (docs/shadow.md)",
		Want:  "a directory path", field: func(s *Serve) any { return &s.Shadow.Policy }},
	{Key: "shadow.registry", Flag: "shadow-registry", Usage: "the candidate's registry `FILE`", Unset: "the serving registry", Want: "a file path",
		field: func(s *Serve) any { return &s.Shadow.Registry }},
	{Key: "shadow.bundle", Flag: "shadow-bundle",
		Usage: "decide also with the candidate registry and policies of the OPA bundle at `URL`, kept current as --bundle is (docs/shadow.md)",
		Want:  "a URL", field: func(s *Serve) any { return &s.Shadow.Bundle }},
	{Key: "approval_webhook", Old: "approvalWebhook", Flag: "approval-webhook", Usage: "POST each new approval request as JSON to `URL`", Want: "an http(s) URL",
		field: func(s *Serve) any { return &s.Approvals.Webhook }},
	{Key: "max_pending_approvals", Old: "maxPendingApprovals", Flag: "max-pending-approvals",
		Usage:   "at most `N` approval requests pending per requester; a call needing one more is refused",
		Default: strconv.Itoa(servesettings.DefaultMaxPending), Want: "a whole number, 1 or more", field: func(s *Serve) any { return &s.Approvals.MaxPending }},
}

// Settings returns every setting of `toolgate serve`, in the order of the
// documentation.
func Settings() []Setting { return append([]Setting(nil), settings...) }

// FlagUsage is the setting's flag usage as -h prints it: Usage, then the
// notes and the default in parentheses.
func (st Setting) FlagUsage() string {
	var extra []string
	if st.Notes != "" {
		extra = append(extra, st.Notes)
	}
	if d := st.DefaultText(); d != "" {
		extra = append(extra, d)
	}
	if len(extra) == 0 {
		return st.Usage
	}
	return st.Usage + " (" + strings.Join(extra, "; ") + ")"
}

// Keys are the keys of a section (auth, shadow, bundle) or of an entry of
// a list of mappings (upstreams); nil for a plain value.
func (st Setting) Keys() []string {
	if st.section || st.list {
		return keysUnder(st.Key + ".")
	}
	return nil
}

// DefaultText is "default VALUE", "default: what no value means", or "".
func (st Setting) DefaultText() string {
	switch {
	case st.Default != "":
		return "default " + st.Default
	case st.Unset != "":
		return "default: " + st.Unset
	}
	return ""
}

// lookupKey finds the setting a config key names, by its key or its old
// key; a problem's key may end in [i] or (name).
func lookupKey(key string) (Setting, bool) {
	key, _, _ = strings.Cut(key, "[")
	for _, st := range settings {
		if st.Key != "" && (st.Key == key || st.Old == key) {
			return st, true
		}
	}
	return Setting{}, false
}

// lookupFlag finds the setting of a flag.
func lookupFlag(name string) (Setting, bool) {
	for _, st := range settings {
		if st.Flag == name {
			return st, true
		}
	}
	return Setting{}, false
}

// keysUnder are the keys of the settings directly in section prefix ("" is
// the top level), without the prefix, in table order.
func keysUnder(prefix string) []string {
	var keys []string
	for _, st := range settings {
		if rest, ok := strings.CutPrefix(st.Key, prefix); ok && rest != "" && !strings.Contains(rest, ".") {
			keys = append(keys, rest)
		}
	}
	return keys
}

// CapabilitiesUsage is the usage of --capabilities, shared by every
// command that compiles policies (serve, test, check, explain).
var CapabilitiesUsage = FlagSetting("capabilities").FlagUsage()

// KeySetting is the setting of the config key key (auth.subject_claim),
// for another command's flag that means the same; it panics on a key
// serve has not.
func KeySetting(key string) Setting {
	st, ok := fileKey(key)
	if !ok {
		panic("config: no setting has the key " + key)
	}
	return st
}

// FlagSetting is the setting of serve's flag name, for another command's
// flag that means the same (toolgate approvals --ledger); it panics on a
// name serve has no flag for.
func FlagSetting(name string) Setting {
	st, ok := lookupFlag(name)
	if !ok {
		panic("config: no setting has the flag " + name)
	}
	return st
}
