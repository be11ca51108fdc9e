package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/toolcall"
)

// Prefix is the path the console is served under.
const Prefix = "/console"

// Authenticator tells who sent a request and whether they hold the
// operator role. The transport has already refused a token that does not
// verify (401); caller nil is nobody.
type Authenticator func(r *http.Request) (caller *toolcall.Caller, operator bool)

// Explainer explains the grant decision for a caller and, with tool set, a
// tools/call of it, with the serving pipeline (inspect.Explain over the
// revision serving).
type Explainer interface {
	Explain(ctx context.Context, caller *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation
}

// ExplainerFunc adapts a function to Explainer.
type ExplainerFunc func(ctx context.Context, caller *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation

// Explain implements Explainer.
func (f ExplainerFunc) Explain(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation {
	return f(ctx, c, tool, meta)
}

// Approvals is the approval store as approvers use it; *approvals.Gate is
// one. PendingPage returns a page of the requests caller may decide and
// the cursor of the next ("" at the end); Decide returns
// approvals.ErrNotFound, ErrForbidden or ErrNotPending.
type Approvals interface {
	PendingPage(ctx context.Context, caller *toolcall.Caller, after string, limit int) ([]approvals.Request, string, error)
	Decide(ctx context.Context, caller *toolcall.Caller, id string, approve bool, note string) (approvals.Request, error)
}

// Status is what the status view shows: the revision serving, where it
// came from, the last reload error and how grant decisions are taken.
type Status struct {
	Status   string    `json:"status"`
	Revision uint64    `json:"revision"`
	Hash     string    `json:"hash"`
	LoadedAt time.Time `json:"loaded_at"`
	// Source says where the revision came from: "bundled example",
	// "files" or "bundle"; Registry and Policy name them.
	Source         string    `json:"source"`
	Registry       string    `json:"registry,omitempty"`
	Policy         string    `json:"policy,omitempty"`
	Tools          int       `json:"tools"`
	LastError      string    `json:"last_error,omitempty"`
	LastErrorAt    time.Time `json:"last_error_at,omitzero"`
	Reloads        uint64    `json:"reloads"`
	ReloadFailures uint64    `json:"reload_failures"`
	// Evaluation is "per_caller" (memoised) or "per_call";
	// EvaluationWhy says why.
	Evaluation    string `json:"evaluation"`
	EvaluationWhy string `json:"evaluation_why"`
	// Shadow is the comparison with a shadow candidate (docs/shadow.md);
	// nil without one.
	Shadow *ShadowStatus `json:"shadow,omitempty"`
}

// ShadowStatus is the shadow candidate on the status view: its revision
// hash, or the error it failed to load or compile with; how many
// decisions were compared and dropped, and how many the candidate failed
// to take; the differences by kind. It is what the health page shows, so
// the two views cannot drift apart.
type ShadowStatus = shadow.Status

// OAuth is the authorization server the console signs in through, as a
// public client (authorization code with PKCE).
type OAuth struct {
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"client_id"`
	Resource string   `json:"resource,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}

// Options configure a Console. Auth and Explainer are required.
type Options struct {
	Auth      Authenticator
	Explainer Explainer
	// Calls, when set, evaluates the toolgate.call rules for a granted
	// call (engine.Revision.Call on the revision serving): the matrix
	// reads a cell's step 5 from it, which is much cheaper than a whole
	// explanation per cell. Nil: the matrix asks Explainer per cell.
	Calls func(ctx context.Context, caller *toolcall.Caller, tool string, meta json.RawMessage) *engine.CallDecision
	// Resources, when set with DecideResource, lists the resources and
	// templates of importing upstreams (a template with its URI template
	// as URI and Template) that the matrix shows below tools and prompts;
	// DecideResource decides one for a caller on the revision serving
	// (engine.Revision.GrantResource, docs/contract.md §16).
	Resources      func(ctx context.Context) []engine.Resource
	DecideResource func(ctx context.Context, caller *toolcall.Caller, res *engine.Resource) engine.ResourceDecision
	// Approvals, when nil, shows an empty queue.
	Approvals Approvals
	// Status, when nil, answers 404 at /console/api/status.
	Status func() Status
	// History, when set, loads a caller's history for GET
	// /console/api/history (docs/contract.md §20); nil answers 404.
	History HistoryFunc
	// Activity is the live tail; nil: an empty one.
	Activity *Activity
	// Callers are the callers the matrix offers first (the callers file
	// of `toolgate check`); those the Activity saw follow.
	Callers []toolcall.Caller
	// OAuth, when set, makes the sign-in page offer the issuer.
	OAuth *OAuth
	// Done ends every live stream when closed (the server shutting down).
	Done <-chan struct{}
	// StreamLifetime ends each live stream after this long (0:
	// DefaultStreamLifetime): its caller is known only when it opens, and
	// the page's reconnect presents the credential again, so an expired or
	// revoked token, or a role taken away, stops the stream.
	StreamLifetime time.Duration
	// OpenStream, when set, accounts for each live stream on the server
	// (httpserve.Server.OpenStream: per caller and per address caps); its
	// error refuses the stream with 429 and the error's text.
	OpenStream func(r *http.Request) (release func(), err error)
	// Approver reports whether a caller without the operator role may
	// follow the approval queue's changes (GET
	// /console/api/approvals/events); nil: operators only.
	Approver func(ctx context.Context, caller *toolcall.Caller) bool
	// MaxSubscribers caps the live streams at once; one more gets 503.
	// Zero is DefaultMaxSubscribers, negative no cap.
	MaxSubscribers int
	Logger         *slog.Logger
}

// Console serves the operator console under Prefix: the embedded page at
// /console/ and its JSON endpoints under /console/api/ (see the package
// documentation). It is an http.Handler, safe for concurrent use.
type Console struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
}

// New returns a Console. It panics when Auth or Explainer is nil.
func New(opts Options) *Console {
	if opts.Auth == nil || opts.Explainer == nil {
		panic("console: Options.Auth and Options.Explainer are required")
	}
	if opts.Activity == nil {
		opts.Activity = NewActivity(0)
	}
	if opts.StreamLifetime <= 0 {
		opts.StreamLifetime = DefaultStreamLifetime
	}
	if opts.MaxSubscribers == 0 {
		opts.MaxSubscribers = DefaultMaxSubscribers
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Console{opts: opts, log: log, mux: http.NewServeMux()}
	c.routes()
	return c
}

func (c *Console) routes() {
	c.mux.Handle("/console/", c.assets())
	c.mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusFound)
	})
	c.mux.HandleFunc("GET /console/api/config", c.config)
	c.mux.HandleFunc("GET /console/api/me", c.signedIn(c.me))
	c.mux.HandleFunc("GET /console/api/approvals", c.signedIn(c.listApprovals))
	c.mux.HandleFunc("GET /console/api/approvals/events", c.signedIn(c.approvalEvents))
	c.mux.HandleFunc("POST /console/api/approvals/{id}/approve", c.signedIn(c.decide(true)))
	c.mux.HandleFunc("POST /console/api/approvals/{id}/refuse", c.signedIn(c.decide(false)))
	c.mux.HandleFunc("GET /console/api/status", c.operator(c.status))
	c.mux.HandleFunc("GET /console/api/callers", c.operator(c.callers))
	c.mux.HandleFunc("POST /console/api/callers/parse", c.operator(c.parseCallers))
	c.mux.HandleFunc("POST /console/api/matrix", c.operator(c.matrix))
	c.mux.HandleFunc("POST /console/api/explain", c.operator(c.explain))
	c.mux.HandleFunc("GET /console/api/activity", c.operator(c.activity))
	c.mux.HandleFunc("GET /console/api/history", c.operator(c.history))
	c.mux.HandleFunc("/console/api/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, "no such endpoint")
	})
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

type handler func(w http.ResponseWriter, r *http.Request, caller *toolcall.Caller, operator bool)

// signedIn serves anyone signed in; nobody gets 401.
func (c *Console) signedIn(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, op := c.opts.Auth(r)
		if caller == nil {
			unauthorized(w)
			return
		}
		h(w, r, caller, op)
	}
}

// operator serves the operator role only: nobody gets 401, anyone else 403.
func (c *Console) operator(h handler) http.HandlerFunc {
	return c.signedIn(func(w http.ResponseWriter, r *http.Request, caller *toolcall.Caller, op bool) {
		if !op {
			httpError(w, http.StatusForbidden, "the console needs the operator role")
			return
		}
		h(w, r, caller, op)
	})
}

func (c *Console) config(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"oauth": c.opts.OAuth})
}

// Me is the answer of GET /console/api/me.
type Me struct {
	Subject  string   `json:"subject"`
	Roles    []string `json:"roles"`
	Operator bool     `json:"operator"`
}

func (c *Console) me(w http.ResponseWriter, _ *http.Request, caller *toolcall.Caller, op bool) {
	roles := caller.Roles
	if roles == nil {
		roles = []string{}
	}
	writeJSON(w, http.StatusOK, Me{Subject: caller.Subject, Roles: roles, Operator: op})
}

// listApprovals answers a page of the requests the caller may decide
// (?after=CURSOR), oldest first, and "next" when there are more.
func (c *Console) listApprovals(w http.ResponseWriter, r *http.Request, caller *toolcall.Caller, _ bool) {
	list, next := []approvals.Request{}, ""
	if c.opts.Approvals != nil {
		var err error
		list, next, err = c.opts.Approvals.PendingPage(r.Context(), caller, r.URL.Query().Get("after"), approvals.DefaultListLimit)
		if errors.Is(err, approvals.ErrBadCursor) {
			httpError(w, http.StatusBadRequest, "after must be the next cursor of a listing")
			return
		}
		if err != nil {
			c.log.Error("console: listing approvals failed", slog.Any("error", err))
			httpError(w, http.StatusInternalServerError, "approvals are not available")
			return
		}
	}
	page := map[string]any{"approvals": list}
	if next != "" {
		page["next"] = next
	}
	writeJSON(w, http.StatusOK, page)
}

// maxBody bounds the JSON bodies the console's endpoints read (a callers
// file is the largest).
const maxBody = 1 << 20

func (c *Console) decide(approve bool) handler {
	return func(w http.ResponseWriter, r *http.Request, caller *toolcall.Caller, _ bool) {
		var body struct {
			Note string `json:"note"`
		}
		if !readJSON(w, r, &body, true) {
			return
		}
		if c.opts.Approvals == nil {
			httpError(w, http.StatusNotFound, "no such approval request")
			return
		}
		req, err := c.opts.Approvals.Decide(r.Context(), caller, r.PathValue("id"), approve, body.Note)
		switch {
		case errors.Is(err, approvals.ErrNotFound):
			httpError(w, http.StatusNotFound, "no such approval request")
		case errors.Is(err, approvals.ErrForbidden):
			httpError(w, http.StatusForbidden, "you may not decide this approval request")
		case errors.Is(err, approvals.ErrNotPending):
			httpError(w, http.StatusConflict, "the approval request is not pending")
		case err != nil:
			c.log.Error("console: decision failed", slog.Any("error", err))
			httpError(w, http.StatusInternalServerError, "approvals are not available")
		default:
			c.opts.Activity.approvalsChanged()
			writeJSON(w, http.StatusOK, req)
		}
	}
}

func (c *Console) status(w http.ResponseWriter, _ *http.Request, _ *toolcall.Caller, _ bool) {
	if c.opts.Status == nil {
		httpError(w, http.StatusNotFound, "no status source")
		return
	}
	writeJSON(w, http.StatusOK, c.opts.Status())
}

// Caller is a caller the matrix offers, and where it was found: "file"
// (Options.Callers) or "seen" (made a call since start).
type Caller struct {
	toolcall.Caller
	From string `json:"from"`
}

func (c *Console) callers(w http.ResponseWriter, _ *http.Request, _ *toolcall.Caller, _ bool) {
	out := []Caller{}
	seen := map[string]bool{}
	for _, k := range c.opts.Callers {
		out = append(out, Caller{Caller: k, From: "file"})
		seen[callerKey(&k)] = true
	}
	for _, k := range c.opts.Activity.Seen() {
		if !seen[callerKey(&k)] {
			out = append(out, Caller{Caller: k, From: "seen"})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"callers": out})
}

// parseCallers reads a callers file as `toolgate check --callers` does
// (inspect.ParseCallers: YAML or JSON), sent as {"document": "..."}.
func (c *Console) parseCallers(w http.ResponseWriter, r *http.Request, _ *toolcall.Caller, _ bool) {
	var body struct {
		Document string `json:"document"`
	}
	if !readJSON(w, r, &body, false) {
		return
	}
	cs, err := inspect.ParseCallers([]byte(body.Document))
	if err != nil {
		httpError(w, http.StatusBadRequest, "not a callers file: "+err.Error())
		return
	}
	out := make([]Caller, len(cs))
	for i := range cs {
		out[i] = Caller{Caller: cs[i], From: "file"}
	}
	writeJSON(w, http.StatusOK, map[string]any{"callers": out})
}

func callerKey(c *toolcall.Caller) string {
	roles := slices.Clone(c.Roles)
	slices.Sort(roles)
	return c.Subject + "\x00" + strings.Join(roles, "\x00")
}

// readJSON decodes a bounded JSON body into v; an empty body is allowed
// when optional. It answers the error itself and reports whether it did not.
func readJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		httpError(w, http.StatusBadRequest, "cannot read the body")
		return false
	}
	if len(data) > maxBody {
		httpError(w, http.StatusRequestEntityTooLarge, "the body is too large")
		return false
	}
	if optional && strings.TrimSpace(string(data)) == "" {
		return true
	}
	if err := json.Unmarshal(data, v); err != nil {
		httpError(w, http.StatusBadRequest, "the body must be a JSON object")
		return false
	}
	return true
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	httpError(w, http.StatusUnauthorized, "a bearer token is required")
}

// httpError answers {"error": msg}: the console's endpoints always answer JSON.
func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
