// Package authzen answers the OpenID AuthZEN Authorization API 1.0
// (Access Evaluation and Access Evaluations, and the PDP metadata at
// /.well-known/authzen-configuration) from toolgate's own decision, as
// `toolgate explain` prints it (inspect.Explain): an evaluation of action
// tools/call is the dry run of the served call pipeline
// (mcpadapter.DryRun), one of tools/list is whether the tool is in that
// caller's listing, one of prompts/get the strict reading of the grant
// decision prompts/get takes, and one of resources/read the one resource
// decision resources/read takes. Nothing here re-tells the decision.
//
// Only a caller holding one of Options.PDPRoles may ask: a request
// without credentials gets 401, a caller without the role 403, before
// the body is decoded. Hidden is absent: a tool, prompt or resource the
// policy hides and one that does not exist are both "decision": false,
// with no reason in the answer unless the asking caller holds the
// operator role.
package authzen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// Paths of the Authorization API 1.0 HTTPS binding.
const (
	EvaluationPath  = "/access/v1/evaluation"
	EvaluationsPath = "/access/v1/evaluations"
	MetadataPath    = "/.well-known/authzen-configuration"
)

// Actions toolgate decides (action.name) and resource types.
const (
	ActionCall         = "tools/call"
	ActionList         = "tools/list"
	ActionPromptGet    = "prompts/get"
	ActionResourceRead = "resources/read"
	ResourceTool       = "mcp_tool"
	ResourcePrompt     = "mcp_prompt"
	ResourceResource   = "mcp_resource"
	subjectMaxList     = 1024
)

// resourceTypes is the resource type of each action.
var resourceTypes = map[string]string{
	ActionCall: ResourceTool, ActionList: ResourceTool,
	ActionPromptGet: ResourcePrompt, ActionResourceRead: ResourceResource,
}

// Bounds of a request body: an evaluation is a subject, an action and a
// resource with a call's arguments, far less than the 4 MiB a call to
// /mcp may carry; a batch holds at most MaxEvaluations of them, most
// sharing the request's defaults. A body beyond its bound answers 413
// before it is decoded further.
const (
	// MaxEvaluationBytes bounds an Access Evaluation request body.
	MaxEvaluationBytes = 64 << 10
	// MaxEvaluationsBytes bounds an Access Evaluations request body.
	MaxEvaluationsBytes = 1 << 20
)

// DefaultMaxEvaluations caps the evaluations of one Access Evaluations
// request.
const DefaultMaxEvaluations = subjectMaxList

// Options configure Routes.
type Options struct {
	// Revisions gives the revision that serves (engine.Engine); one
	// request, batch or single, is answered from one revision (required).
	Revisions interface{ Current() *engine.Revision }
	// Methods are the methods rows dispatch to: arguments sent as
	// resource.properties.arguments are bound against them as a call
	// would bind them. Nil: evaluations stop before binding.
	Methods methods.Set
	// Caller is the caller of an HTTP request (httpserve.RequestCaller);
	// nil is nobody (required).
	Caller func(*http.Request) *toolcall.Caller
	// PDPRoles are the roles that may ask (--pdp-role). Empty: nobody may.
	PDPRoles []string
	// AdminRole is the operator role: its holders get the reasons.
	AdminRole string
	// Resolve finds what a resource URI is, as resources/read finds it
	// (mcpadapter.ResolveResource over the gateway's catalog); nil: no
	// upstream serves resources, so every resources/read is false.
	Resolve func(ctx context.Context, uri string) *engine.Resource
	// ListFallbackNone says a failing grant policy lists nothing
	// (--list-fallback none), so tools/list evaluations then are false.
	ListFallbackNone bool
	// MaxEvaluations caps one Access Evaluations request; zero is
	// DefaultMaxEvaluations.
	MaxEvaluations int
	// Logger receives refused requests; nil discards.
	Logger *slog.Logger
}

// Routes returns the handlers by http.ServeMux pattern, for
// httpserve.Options.Routes (behind the Host/Origin guard and the bearer
// tokens). It panics without Revisions or Caller.
func Routes(o Options) map[string]http.Handler {
	if o.Revisions == nil || o.Caller == nil {
		panic("authzen: Options.Revisions and Options.Caller are required")
	}
	if o.MaxEvaluations <= 0 {
		o.MaxEvaluations = DefaultMaxEvaluations
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{o: o}
	return map[string]http.Handler{
		"POST " + EvaluationPath:  h.pdp(h.evaluation),
		"POST " + EvaluationsPath: h.pdp(h.evaluations),
		"GET " + MetadataPath:     http.HandlerFunc(h.metadata),
	}
}

type handler struct{ o Options }

// Subject is AuthZEN's subject: the caller decided for. Its properties
// are the caller's roles and claims; nothing else is read.
type Subject struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Properties json.RawMessage `json:"properties,omitempty"`
}

// Action is AuthZEN's action: the MCP method.
type Action struct {
	Name       string          `json:"name"`
	Properties json.RawMessage `json:"properties,omitempty"`
}

// Resource is AuthZEN's resource: the tool, with the call's arguments
// and _meta as properties.
type Resource struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Properties json.RawMessage `json:"properties,omitempty"`
}

// Request is one Access Evaluation request.
type Request struct {
	Subject  *Subject       `json:"subject,omitempty"`
	Action   *Action        `json:"action,omitempty"`
	Resource *Resource      `json:"resource,omitempty"`
	Context  map[string]any `json:"context,omitempty"`
}

// BatchRequest is one Access Evaluations request: top-level values are
// the defaults of each evaluation.
type BatchRequest struct {
	Request
	Evaluations []Request `json:"evaluations,omitempty"`
	Options     *struct {
		Semantic string `json:"evaluations_semantic,omitempty"`
	} `json:"options,omitempty"`
}

// Decision is AuthZEN's answer.
type Decision struct {
	Decision bool           `json:"decision"`
	Context  map[string]any `json:"context,omitempty"`
}

// The evaluations_semantic values (Authorization API 1.0 §7.1.2).
const (
	ExecuteAll          = "execute_all"
	DenyOnFirstDeny     = "deny_on_first_deny"
	PermitOnFirstPermit = "permit_on_first_permit"
)

// pdp admits only a caller with a PDP role: 401 without credentials, 403
// without the role, before the body is read.
func (h *handler) pdp(next func(http.ResponseWriter, *http.Request, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := h.o.Caller(r)
		if id := r.Header.Get("X-Request-ID"); id != "" {
			w.Header().Set("X-Request-ID", id)
		}
		switch {
		case c == nil:
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "a bearer token with a PDP role is required", http.StatusUnauthorized)
			return
		case !slices.ContainsFunc(c.Roles, func(r string) bool { return slices.Contains(h.o.PDPRoles, r) }):
			h.o.Logger.Info("authzen: refused a caller without a PDP role", slog.String("subject", c.Subject))
			http.Error(w, "a PDP role is required", http.StatusForbidden)
			return
		}
		operator := h.o.AdminRole != "" && slices.Contains(c.Roles, h.o.AdminRole)
		next(w, r, operator)
	})
}

func (h *handler) evaluation(w http.ResponseWriter, r *http.Request, operator bool) {
	var req Request
	if !decodeBody(w, r, MaxEvaluationBytes, &req) {
		return
	}
	rev := h.o.Revisions.Current()
	d, err := h.decide(r.Context(), rev, &req, operator)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, d)
}

func (h *handler) evaluations(w http.ResponseWriter, r *http.Request, operator bool) {
	var req BatchRequest
	if !decodeBody(w, r, MaxEvaluationsBytes, &req) {
		return
	}
	rev := h.o.Revisions.Current()
	// Without evaluations the request is an Access Evaluation request
	// (Authorization API 1.0 §7.1), answered as one.
	if len(req.Evaluations) == 0 {
		d, err := h.decide(r.Context(), rev, &req.Request, operator)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, d)
		return
	}
	if len(req.Evaluations) > h.o.MaxEvaluations {
		http.Error(w, fmt.Sprintf("at most %d evaluations in one request", h.o.MaxEvaluations), http.StatusBadRequest)
		return
	}
	semantic := ExecuteAll
	if req.Options != nil && req.Options.Semantic != "" {
		semantic = req.Options.Semantic
	}
	if semantic != ExecuteAll && semantic != DenyOnFirstDeny && semantic != PermitOnFirstPermit {
		http.Error(w, fmt.Sprintf("options.evaluations_semantic %q is not one of %s, %s, %s", semantic, ExecuteAll, DenyOnFirstDeny, PermitOnFirstPermit), http.StatusBadRequest)
		return
	}
	out := make([]Decision, 0, len(req.Evaluations))
	for i := range req.Evaluations {
		e := merge(&req.Request, &req.Evaluations[i])
		d, err := h.decide(r.Context(), rev, e, operator)
		if err != nil {
			// An evaluation's error is its decision (§7.2.1): false, with
			// the error in its context.
			d = Decision{Context: errorContext(http.StatusBadRequest, err.Error())}
		}
		out = append(out, d)
		if (semantic == DenyOnFirstDeny && !d.Decision) || (semantic == PermitOnFirstPermit && d.Decision) {
			break
		}
	}
	writeJSON(w, map[string]any{"evaluations": out})
}

// merge is one evaluation with the request's top-level values as its
// defaults: a member the evaluation sets replaces the default whole.
func merge(def, e *Request) *Request {
	m := *e
	if m.Subject == nil {
		m.Subject = def.Subject
	}
	if m.Action == nil {
		m.Action = def.Action
	}
	if m.Resource == nil {
		m.Resource = def.Resource
	}
	if m.Context == nil {
		m.Context = def.Context
	}
	return &m
}

// decide answers one evaluation from rev. An error is a request toolgate
// cannot decide (a missing or malformed member): the evaluation's 400.
func (h *handler) decide(ctx context.Context, rev *engine.Revision, req *Request, operator bool) (Decision, error) {
	if req.Action == nil || req.Action.Name == "" {
		return Decision{}, errors.New("action.name is required")
	}
	action := req.Action.Name
	if _, ok := resourceTypes[action]; !ok {
		return Decision{Context: errorContext(http.StatusBadRequest,
			fmt.Sprintf("action %q is not an MCP method toolgate decides: tools/call, tools/list, prompts/get or resources/read", action))}, nil
	}
	caller, err := subjectCaller(req.Subject)
	if err != nil {
		return Decision{}, err
	}
	res, err := resourceOf(action, req.Resource)
	if err != nil {
		return Decision{}, err
	}
	opts := inspect.ExplainOptions{Revision: rev, Caller: caller, Meta: res.Meta}
	switch action {
	case ActionCall:
		opts.Tool, opts.Arguments, opts.Methods = req.Resource.ID, res.Arguments, h.o.Methods
	case ActionPromptGet:
		opts.Prompt, opts.PromptArguments = req.Resource.ID, res.Arguments
	case ActionResourceRead:
		opts.URI = req.Resource.ID
		if h.o.Resolve != nil {
			opts.Resource = h.o.Resolve(ctx, opts.URI)
		}
	}
	x := inspect.Explain(ctx, opts)
	return answer(x, action, req.Resource.ID, operator, h.o.ListFallbackNone), nil
}

// answer reads the decision from the explanation, as `toolgate explain`
// prints it.
func answer(x *inspect.Explanation, action, tool string, operator, listNone bool) Decision {
	var d Decision
	switch action {
	case ActionCall:
		c := x.Call
		d.Decision = c.Stage == inspect.StageRun
		if operator {
			d.Context = map[string]any{
				"revision":     x.Revision,
				"stage":        c.Stage,
				"reason_admin": map[string]string{"en": c.DecidedBy},
			}
			if len(c.Rules) > 0 {
				d.Context["rules"] = c.Rules
			}
			if c.Answer != "" {
				d.Context["reason_user"] = map[string]string{"en": c.Answer}
			}
			return d
		}
		// Hidden is absent: the refusal of an unknown tool says nothing.
		if !d.Decision && c.Stage != inspect.StageUnknown && c.Stage != inspect.StageNobody && c.Answer != "" {
			d.Context = map[string]any{"reason_user": map[string]string{"en": c.Answer}}
		}
	case ActionList:
		d.Decision = slices.Contains(x.Listed, tool) && !(listNone && x.Mode == engine.Failed.String())
		if operator {
			d.Context = map[string]any{"revision": x.Revision, "mode": x.Mode}
			if len(x.OverrideRules) > 0 {
				d.Context["rules"] = x.OverrideRules
			}
			if x.Failure != "" {
				d.Context["reason_admin"] = map[string]string{"en": x.Failure}
			}
		}
	case ActionPromptGet:
		p := x.Prompt
		d.Decision = p.Granted
		if operator {
			d.Context = map[string]any{"revision": x.Revision, "reason_admin": map[string]string{"en": p.DecidedBy}}
			if p.Failure != "" {
				d.Context["failure"] = p.Failure
			}
			if p.Answer != "" {
				d.Context["reason_user"] = map[string]string{"en": p.Answer}
			}
			return d
		}
		// Hidden is absent: only a failed decision says so, as prompts/get
		// would answer it.
		if p.Failure != "" {
			d.Context = map[string]any{"reason_user": map[string]string{"en": p.Answer}}
		}
	case ActionResourceRead:
		r := x.Resource
		d.Decision = r.Allowed
		if operator {
			d.Context = map[string]any{"revision": x.Revision, "outcome": r.Outcome, "reason_admin": map[string]string{"en": r.DecidedBy}}
			if r.Failure != "" {
				d.Context["failure"] = r.Failure
			}
		}
		// Else nothing: resources/read answers a hidden, a failed and an
		// absent resource alike.
	}
	return d
}

func errorContext(status int, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"status": status, "message": msg}}
}

// subjectCaller is the caller the subject stands for: id is the subject,
// properties.roles the roles, properties.claims the claims (bounded like
// a token's, docs/contract.md §12). Another property is refused: the
// policy would not see it, and a decision is never taken on other input
// than the one sent.
func subjectCaller(s *Subject) (*toolcall.Caller, error) {
	if s == nil || s.Type == "" || s.ID == "" {
		return nil, errors.New("subject.type and subject.id are required")
	}
	var p struct {
		Roles  []string        `json:"roles"`
		Claims json.RawMessage `json:"claims"`
	}
	if err := strict(s.Properties, &p, "subject.properties"); err != nil {
		return nil, err
	}
	c := &toolcall.Caller{Subject: s.ID, Roles: p.Roles}
	if c.Roles == nil {
		c.Roles = []string{}
	}
	if len(p.Claims) > 0 && !bytes.Equal(p.Claims, []byte("null")) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(p.Claims, &obj) != nil {
			return nil, errors.New("subject.properties.claims: want a JSON object")
		}
		c.Claims = engine.BoundMeta(p.Claims).Map()
	}
	if c.Claims == nil {
		c.Claims = map[string]any{}
	}
	return c, nil
}

type resourceProps struct {
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"meta"`
}

// resourceOf reads the resource of action: its id (the tool or prompt
// name, the resource URI), and the request's arguments and _meta as the
// served method reads them. A prompts/get's arguments are an object of
// strings (MCP's GetPromptParams), marshalled as the server marshals
// them; a resources/read has none.
func resourceOf(action string, r *Resource) (resourceProps, error) {
	var p resourceProps
	want := resourceTypes[action]
	if r == nil || r.ID == "" {
		return p, errors.New("resource.id (the tool or prompt name, or the resource URI) is required")
	}
	if r.Type != want {
		return p, fmt.Errorf("resource.type %q: want %s for %s", r.Type, want, action)
	}
	if err := strict(r.Properties, &p, "resource.properties"); err != nil {
		return p, err
	}
	if bytes.Equal(p.Arguments, []byte("null")) {
		p.Arguments = nil
	}
	switch {
	case action == ActionResourceRead && p.Arguments != nil:
		return p, errors.New("resource.properties.arguments: resources/read has no arguments (toolgate reads only the members the policy sees)")
	case action == ActionPromptGet && p.Arguments != nil:
		var args map[string]string
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			return p, errors.New("resource.properties.arguments: want a JSON object of strings, as prompts/get takes")
		}
		b, err := json.Marshal(args)
		if err != nil {
			return p, err
		}
		p.Arguments = b
	}
	return p, nil
}

// strict decodes raw (absent or null: nothing) into v, refusing members v
// does not have.
func strict(raw json.RawMessage, v any, what string) error {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %v (toolgate reads only the members the policy sees)", what, err)
	}
	return nil
}

// decodeBody decodes one JSON object of at most limit bytes from r's
// body; when it cannot, it answers (413 beyond limit, 400 otherwise) and
// reports false.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	if r.Body == nil {
		http.Error(w, "a JSON body is required", http.StatusBadRequest)
		return false
	}
	var tooLarge *http.MaxBytesError
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if err := dec.Decode(v); err != nil {
		if errors.As(err, &tooLarge) {
			http.Error(w, "the body is too large", http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, fmt.Sprintf("the body is not a JSON request: %v", err), http.StatusBadRequest)
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		if errors.As(err, &tooLarge) {
			http.Error(w, "the body is too large", http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "the body holds data after the JSON request", http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// metadata serves the PDP metadata (Authorization API 1.0 §9) to anyone:
// the endpoints, under the URL it was asked at.
func (h *handler) metadata(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host
	writeJSON(w, map[string]any{
		"policy_decision_point":       base,
		"access_evaluation_endpoint":  base + EvaluationPath,
		"access_evaluations_endpoint": base + EvaluationsPath,
	})
}
