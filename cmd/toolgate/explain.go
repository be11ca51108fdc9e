package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks/ledger"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/toolcall"
	"github.com/toolgate/toolgate/upstream"
)

func init() {
	register(command{name: "explain", summary: "explain the grant decision, and a call, for one caller", run: runExplainCommand})
}

const explainSynopsis = "explain [--as SUBJECT [--role ROLE ...] [--claims JSON] | --token FILE --issuer URL [--jwks FILE|URL] [--resource URI] [--audience AUD ...] | --claims JSON] [--subject-claim PATH] [--roles-claim PATH] [--http ADDR] [--tool NAME [--args JSON] [--history JSON] [--result JSON] [--ledger STORE]] [--prompt NAME] [--resource URI | --uri URI] [--upstream NAME=COMMAND|URL ...] [--config FILE [--connect]] [--meta JSON] [--input] [--registry FILE] [--policy DIR] [--bundle FILE [--bundle-verification-key FILE]] [--capabilities FILE] [--format text|json]"

func runExplainCommand(ctx context.Context, e *env) int {
	var (
		src                sourceFlags
		caps               capabilitiesFlag
		subject, tool      string
		claims, args, meta string
		result, ledgerSpec string
		history            string
		roles              repeated
		format             = formatFlag("text")
		tokenFile          string
		auth               identity.Settings
		audiences          repeated
		httpAddr           string
		input              bool
		prompt, uri        string
		upstreams          repeated
		cfgFile            settingsFlag
		connect            bool
	)
	fs := newFlags("explain", explainSynopsis, e.stderr)
	cfgFile.register(fs, ": registry, policy, capabilities, auth, http and upstreams come from it (flags win)")
	fs.BoolVar(&connect, "connect", false, "connect the settings file's upstreams, as serve does, so that their imported tools and upstream:NAME/TOOL rows are explained as served (without it nothing is connected)")
	src.register(fs)
	caps.register(fs)
	fs.StringVar(&subject, "as", "", "the caller's `SUBJECT` ("+config.FlagSetting("as").DefaultText()+")")
	fs.Var(&roles, "role", "a `ROLE` of the caller (repeatable)")
	fs.StringVar(&claims, "claims", "", "the caller's claims, a JSON `object`; without --as, a token's claims: the caller is what --subject-claim and --roles-claim find in them")
	fs.StringVar(&tokenFile, "token", "", "explain for the caller of the access token in `FILE` (- is stdin), verified as serve --issuer would")
	fs.StringVar(&auth.Issuer, "issuer", "", "with --token: the authorization server `URL` (as serve --issuer)")
	fs.StringVar(&auth.JWKS, "jwks", "", "with --token: the issuer's signing keys, a JWKS `FILE` or URL (as serve --jwks)")
	fs.StringVar(&auth.Resource, "resource", "", "with --token: this server's `URI` (as serve --resource; default http://ADDR/mcp of --http); without --token: a resource URI to explain, as --uri")
	fs.StringVar(&httpAddr, "http", "", "with --token: the `ADDR` the server listens at, which the default --resource follows (as serve --http; default: the settings file's http, else "+config.DefaultHTTP+")")
	fs.Var(&audiences, "audience", "with --token: an accepted audience `AUD` (repeatable; as serve --audience)")
	fs.StringVar(&auth.SubjectClaim, "subject-claim", "", "the claim `PATH` of the subject, as auth.subject_claim ("+config.KeySetting("auth.subject_claim").DefaultText()+")")
	fs.StringVar(&auth.RolesClaim, "roles-claim", "", "the claim `PATH` of the roles, as auth.roles_claim ("+config.KeySetting("auth.roles_claim").DefaultText()+")")
	fs.StringVar(&tool, "tool", "", "explain a tools/call of the tool `NAME`")
	fs.StringVar(&args, "args", "", "the call's arguments, `JSON` (with --tool)")
	fs.StringVar(&prompt, "prompt", "", "explain the decision on the imported prompt `NAME` (docs/contract.md §16)")
	fs.StringVar(&uri, "uri", "", "explain the decision on the resource `URI` (docs/contract.md §16)")
	fs.Var(&upstreams, "upstream", "an importing upstream `NAME=COMMAND|URL` whose prompts and resources to explain (repeatable; as serve --upstream, with import)")
	fs.StringVar(&history, "history", "", "with --tool: the caller's history the policies read as input.history, `JSON`: an array of {tool, at, outcome, arguments}, newest first (the registry must keep a history; default: none yet)")
	fs.StringVar(&meta, "meta", "", "the request's _meta, `JSON`; bounded as the server bounds it")
	fs.BoolVar(&input, "input", false, "print the input document the policies get for this caller and request (a tools/call with --tool, else a tools/list), as JSON, instead of the explanation")
	fs.StringVar(&result, "result", "", "with --tool: a result the method is taken to return, a CallToolResult `JSON`: shows what the result rules make of it")
	fs.StringVar(&ledgerSpec, "ledger", "", "with --tool: read the rate limits' counters in this ledger `STORE` (memory, sqlite:PATH, postgres://...), never counting")
	fs.Var(&format, "format", "output `format`: text or json")
	if done, code := parseFlags(fs, e.args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, e.stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	auth.Audiences = audiences
	var ups []upstream.Config
	settings, err := cfgFile.load()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return 2
	}
	var pinsPath string
	if settings != nil {
		src.fill(settings, &caps)
		if httpAddr == "" {
			httpAddr = settings.HTTP
		}
		if auth.Issuer == "" && settings.Auth.Enabled() {
			a := settings.Auth
			if len(audiences) > 0 {
				a.Audiences = audiences
			}
			auth = a
		}
		if connect {
			for _, u := range config.PoolConfigs(settings.Upstreams) {
				ups = append(ups, u)
				if u.Pin && pinsPath == "" {
					if pinsPath, err = settings.PinsFile(); err != nil {
						fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
						return 2
					}
				}
			}
		} else if len(settings.Upstreams) > 0 {
			fmt.Fprintf(e.stderr, "toolgate explain: %s names upstreams; none is connected, so their imported tools are not in this explanation (give --connect to explain what serve serves)\n", cfgFile.file())
		}
	} else if connect {
		return usageError(fs, e.stderr, "--connect connects the settings file's upstreams: give --config (or run in a project with %s)", projectFile)
	}
	if httpAddr == "" {
		httpAddr = config.DefaultHTTP
	}
	if tokenFile == "" && auth.Resource != "" {
		// Without a token there is no audience to check: --resource names
		// the resource to explain (docs/contract.md §16).
		if uri != "" {
			return usageError(fs, e.stderr, "give --resource or --uri, not both")
		}
		uri, auth.Resource = auth.Resource, ""
	}
	for _, u := range upstreams {
		cfg, err := upstream.ParseFlag(u)
		if err != nil {
			return usageError(fs, e.stderr, "--upstream: %v", err)
		}
		cfg.Import = true
		ups = append(ups, cfg)
	}
	var caller *toolcall.Caller
	var header []string // what the text output says of a token, first
	switch {
	case tokenFile != "" && (subject != "" || claims != "" || len(roles) > 0):
		return usageError(fs, e.stderr, "--token gives the caller: leave out --as, --role and --claims")
	case tokenFile != "":
		if !auth.Enabled() {
			return usageError(fs, e.stderr, "--token needs --issuer (and --jwks unless the issuer publishes its keys)")
		}
		var code int
		if caller, header, code = tokenCaller(ctx, e, tokenFile, auth, httpAddr); code != 0 {
			return code
		}
	case subject != "":
		if auth.SubjectClaim != "" || auth.RolesClaim != "" {
			return usageError(fs, e.stderr, "--subject-claim and --roles-claim read a token's claims: give --token, or --claims without --as")
		}
		caller = &toolcall.Caller{Subject: subject, Roles: []string(roles), Claims: map[string]any{}}
		if caller.Roles == nil {
			caller.Roles = []string{}
		}
		if claims != "" {
			if err := json.Unmarshal([]byte(claims), &caller.Claims); err != nil || caller.Claims == nil {
				return usageError(fs, e.stderr, "--claims: want a JSON object")
			}
		}
	case len(roles) > 0:
		return usageError(fs, e.stderr, "--role needs --as (without it the caller is nobody)")
	case claims != "":
		// A token's claims, read as the server reads a verified token's.
		s := auth.WithDefaults("")
		c, err := identity.CallerFromClaims([]byte(claims), s)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate explain: these claims are no caller: %s\n", reasonOf(err))
			return 1
		}
		caller = c
		header = claimsHeader("not verified (--claims)", s, c)
	}
	if args != "" && tool == "" {
		return usageError(fs, e.stderr, "--args needs --tool")
	}
	if (result != "" || ledgerSpec != "" || history != "") && tool == "" {
		return usageError(fs, e.stderr, "--result, --history and --ledger need --tool")
	}
	var hist engine.History
	if history != "" {
		h, err := inspect.ReadHistory(json.RawMessage(history))
		if err != nil {
			return usageError(fs, e.stderr, "--history: %v", err)
		}
		hist = h
	}
	if result != "" {
		if _, err := inspect.ReadResult(json.RawMessage(result)); err != nil {
			return usageError(fs, e.stderr, "%v", err)
		}
	}
	if err := inspect.CheckArguments(json.RawMessage(args)); args != "" && json.Valid([]byte(args)) && err != nil {
		return usageError(fs, e.stderr, "--args: %v", err)
	}
	for _, f := range []struct{ name, v string }{{"args", args}, {"meta", meta}} {
		if f.v != "" && !json.Valid([]byte(f.v)) {
			return usageError(fs, e.stderr, "--%s: not valid JSON", f.name)
		}
	}
	source, err := src.source()
	if err != nil {
		return usageError(fs, e.stderr, "%v", err)
	}
	capabilities, err := caps.load()
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return 2
	}
	p := explainParams{source: source, caps: capabilities, format: format, header: header, input: input, upstreams: ups, pins: pinsPath, opts: inspect.ExplainOptions{
		Prompt:    prompt,
		URI:       uri,
		Caller:    caller,
		Tool:      tool,
		Meta:      json.RawMessage(meta),
		Arguments: json.RawMessage(args),
		Methods:   builtinMethods(),
		Result:    json.RawMessage(result),
		History:   hist,
	}}
	if ledgerSpec != "" {
		st, err := store.OpenStore(ctx, ledgerSpec)
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate explain: --ledger: %v\n", err)
			return 2
		}
		defer st.Close()
		ls, ok := st.(store.LimitStore)
		if !ok {
			fmt.Fprintf(e.stderr, "toolgate explain: --ledger: the store %T counts no rate limits\n", st)
			return 2
		}
		p.opts.Limits = ledger.NewLimiter(ls, nil)
	}
	return p.run(ctx, e)
}

// explainParams is `toolgate explain` once its flags are read.
type explainParams struct {
	source engine.Source
	caps   *engine.Capabilities   // nil: the default
	opts   inspect.ExplainOptions // without Revision
	format formatFlag
	// header are lines the text output opens with (what a token said).
	header []string
	// input prints the input document instead of the explanation.
	input bool
	// upstreams are importing upstreams whose prompts join the revision
	// and whose resources --uri resolves in, and whose tools rows of
	// upstream:NAME/TOOL call.
	upstreams []upstream.Config
	// pins is the pins file of the upstreams that pin; "" when none does.
	pins string
}

// run loads the source and writes the explanation: exit 0, or 1 when the
// registry or policies do not load.
func (p *explainParams) run(ctx context.Context, e *env) int {
	engOpts := []engine.Option{engine.WithCapabilities(p.caps)}
	var pool *upstream.Pool
	if len(p.upstreams) > 0 {
		var err error
		pool, err = upstream.NewPool(p.upstreams, &upstream.Options{Pins: p.pins, Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
			return 2
		}
		defer pool.Close()
		if err := pool.Connect(ctx); err != nil {
			fmt.Fprintf(e.stderr, "toolgate explain: %v\n(an upstream that is not connected has no tools here, as when serving)\n", err)
		}
		// Rows of upstream:NAME/TOOL call the upstream, as served.
		opts := p.opts
		opts.Methods = upstream.Chain(opts.Methods, pool)
		p.opts = opts
		// The revision serve would build: the upstreams' tools and prompts
		// imported (docs/contract.md §15, §16).
		engOpts = append(engOpts, engine.WithRegistryHook(func(ctx context.Context, reg *registry.Registry) (*registry.Registry, error) {
			rows, err := pool.Import(ctx)
			if err != nil {
				return nil, err
			}
			return upstream.MergeImports(reg, rows, pool.ImportedPrompts(ctx))
		}))
	}
	eng, err := engine.New(ctx, p.source, engOpts...)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n(run toolgate check for every problem)\n", err)
		return 1
	}
	opts := p.opts
	opts.Revision = eng.Current()
	if opts.URI != "" && pool != nil {
		opts.Resource = mcpadapter.ResolveResource(ctx, pool, opts.URI)
	}
	if opts.History != nil && opts.Revision.Registry().History == nil {
		fmt.Fprintln(e.stderr, "toolgate explain: --history: the registry keeps no history (history: {per, max}), so policies see no input.history")
		return 2
	}
	if p.input {
		return writeInput(e, opts)
	}
	x := inspect.Explain(ctx, opts)
	if p.format == "json" {
		err = x.WriteJSON(e.stdout)
	} else {
		for _, l := range p.header {
			fmt.Fprintln(e.stdout, l)
		}
		err = x.WriteText(e.stdout)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return 1
	}
	return 0
}

// tokenCaller verifies the access token in file (- is stdin) with the
// settings serve would use and returns its caller and the lines saying so.
// A token that does not verify is exit 1, with the reason the server only
// logs: the operator is asking why.
func tokenCaller(ctx context.Context, e *env, file string, auth identity.Settings, httpAddr string) (*toolcall.Caller, []string, int) {
	var raw []byte
	var err error
	if file == "-" {
		raw, err = io.ReadAll(io.LimitReader(e.stdin, identity.MaxTokenLen+2))
	} else {
		raw, err = fsx.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: --token: %v\n", err)
		return nil, nil, 2
	}
	token := strings.TrimSpace(string(raw))
	s := auth.WithDefaults(httpAddr)
	// Key fetch failures are logged; the time of day is not worth a line.
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	v, err := identity.NewJWT(ctx, s, identity.WithLogger(log), identity.WithCacheSize(0))
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return nil, nil, 2
	}
	c, err := v.Verify(ctx, token)
	switch {
	case errors.Is(err, identity.ErrUnavailable):
		fmt.Fprintf(e.stderr, "toolgate explain: cannot verify the token: the signing keys of %s are not available (see the log above)\n", s.Issuer)
		return nil, nil, 1
	case err != nil:
		fmt.Fprintf(e.stderr, "toolgate explain: the server refuses this token (401 invalid_token): %s\n", reasonOf(err))
		return nil, nil, 1
	}
	return c, claimsHeader(fmt.Sprintf("verified: issuer %s, audience %s", s.Issuer, strings.Join(s.Audiences, ", ")), s, c), 0
}

// reasonOf is the reason of an invalid token error, else the error.
func reasonOf(err error) string {
	var ite *identity.InvalidTokenError
	if errors.As(err, &ite) {
		if ite.Err != nil {
			return ite.Reason + ": " + ite.Err.Error()
		}
		return ite.Reason
	}
	return err.Error()
}

// claimsHeader says where the caller came from: the token's state, the
// claim paths read, and the claims the policy sees.
func claimsHeader(state string, s identity.Settings, c *toolcall.Caller) []string {
	claims, err := json.Marshal(c.Claims)
	if err != nil {
		claims = []byte("(cannot be shown: " + err.Error() + ")")
	}
	return []string{
		"token     " + state,
		fmt.Sprintf("mapping   subject from claim %s, roles from claim %s", s.SubjectClaim, s.RolesClaim),
		"claims    " + string(claims),
		"",
	}
}

// writeInput prints the input document opts' revision builds for its caller
// and request: for --tool, the tools/call's, with the resolved row as
// "tool" when one has that name (what the call rules get; the grant
// decision gets the same document without "tool"); else the tools/list's.
// An input that cannot be built (arguments the policy could not see
// exactly) is exit 1 with the reason: the server fails that decision.
func writeInput(e *env, opts inspect.ExplainOptions) int {
	req := engine.Request{Method: engine.MethodList, Meta: engine.BoundMeta(opts.Meta)}
	withTool := false
	if opts.Tool != "" {
		req.Method, req.Tool, req.Arguments = engine.MethodCall, opts.Tool, opts.Arguments
		if len(req.Arguments) == 0 {
			req.Arguments = json.RawMessage("{}")
		}
		withTool = opts.Revision.Tool(opts.Tool) != nil
		// input.history, where the registry keeps one (docs/contract.md
		// §20): the one given, at most max entries.
		if cfg := opts.Revision.Registry().History; cfg != nil {
			req.History = engine.History{}
			if opts.History != nil {
				req.History = opts.History[:min(len(opts.History), cfg.Max)]
			}
		}
	}
	doc, err := opts.Revision.InputDocument(opts.Caller, req, withTool)
	if err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: no input document: %v (the server fails this decision: Tool access could not be verified.)\n", err)
		return 1
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return 1
	}
	out.WriteByte('\n')
	if _, err := e.stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintf(e.stderr, "toolgate explain: %v\n", err)
		return 1
	}
	return 0
}
