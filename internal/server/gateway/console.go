package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/internal/server/approvals"
	"github.com/toolgate/toolgate/internal/server/console"
	"github.com/toolgate/toolgate/internal/server/httpserve"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/mcpadapter"
	"github.com/toolgate/toolgate/toolcall"
)

// consoleClientID is the OAuth client id the console signs in with, as a
// public client (PKCE); the issuer registers it with the redirect URI
// <origin>/console/.
const consoleClientID = "toolgate-console"

// newConsole builds the operator console (/console) over the serving
// engine, the approval gate and the activity tail: the same identity as
// /mcp (httpserve.RequestCaller), the operator role of --admin-role.
func newConsole(cfg Config, eng *engine.Engine, gate *approvals.Gate, act *console.Activity, jwt *identity.JWT, done <-chan struct{}, openStream func(*http.Request) (func(), error), cat mcpadapter.Catalog, sh func() *shadow.Status, hist hooks.History) http.Handler {
	adminRole := cfg.HTTPServer.Admin()
	opts := console.Options{
		Auth: func(r *http.Request) (*toolcall.Caller, bool) {
			c := httpserve.RequestCaller(r)
			return c, c != nil && slices.Contains(c.Roles, adminRole)
		},
		Explainer: console.ExplainerFunc(func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *inspect.Explanation {
			return inspect.Explain(ctx, inspect.ExplainOptions{Revision: eng.Current(), Caller: c, Tool: tool, Meta: meta})
		}),
		Calls: func(ctx context.Context, c *toolcall.Caller, tool string, meta json.RawMessage) *engine.CallDecision {
			return eng.Current().Call(ctx, c, engine.Request{Method: engine.MethodCall, Tool: tool, Meta: engine.BoundMeta(meta)})
		},
		Approvals:  gate,
		Approver:   gate.IsApprover,
		OpenStream: openStream,
		Activity:   act,
		Status: func() console.Status {
			st := consoleStatus(cfg, eng)
			if s := sh(); s != nil {
				st.Shadow = &console.ShadowStatus{Candidate: s.Candidate, Error: s.Error, Refused: s.Refused, Compared: s.Compared, Dropped: s.Dropped, Differences: s.Differences}
			}
			return st
		},
		Done: done,
	}
	if hist != nil {
		// What a caller's input.history holds now (docs/contract.md §20),
		// under the serving revision's history setting.
		opts.History = func(ctx context.Context, source, subject string) (engine.History, error) {
			cfg := eng.Current().Registry().History
			if cfg == nil {
				return nil, console.ErrNoHistory
			}
			return hist.Load(ctx, source, subject, cfg.Window(), cfg.Max)
		}
	}
	if cat != nil {
		// The matrix shows the upstreams' resources and templates too
		// (docs/contract.md §16), decided as the server decides them.
		opts.Resources = func(ctx context.Context) []engine.Resource {
			var out []engine.Resource
			for _, r := range cat.Resources(ctx) {
				out = append(out, engine.Resource{URI: r.Resource.URI, Name: r.Resource.Name, MIMEType: r.Resource.MIMEType, Upstream: r.Upstream, Section: r.Section})
			}
			for _, t := range cat.Templates(ctx) {
				out = append(out, engine.Resource{URI: t.Template.URITemplate, Name: t.Template.Name, MIMEType: t.Template.MIMEType, Upstream: t.Upstream, Section: t.Section, Template: t.Template.URITemplate})
			}
			return out
		}
		opts.DecideResource = func(ctx context.Context, c *toolcall.Caller, res *engine.Resource) engine.ResourceDecision {
			return eng.Current().GrantResource(ctx, c, engine.Request{Method: engine.MethodResourcesList}, res)
		}
	}
	if jwt != nil {
		s := jwt.Settings()
		opts.OAuth = &console.OAuth{Issuer: s.Issuer, ClientID: consoleClientID, Resource: s.Resource, Scopes: s.ScopesSupported}
	}
	return console.New(opts)
}

func consoleStatus(cfg Config, eng *engine.Engine) console.Status {
	h := health(eng, nil) // the console shows the revision; /healthz the bundle
	rev := eng.Current()
	cached, why := rev.DecisionMode()
	s := console.Status{Status: h.Status, Revision: h.Revision.Number, Hash: h.Hash, LoadedAt: h.LoadedAt, LastError: h.LastError,
		LastErrorAt: h.LastErrorAt, Reloads: h.Reloads, ReloadFailures: h.ReloadFailure, Tools: len(rev.Registry().Tools),
		Evaluation: "per_call", EvaluationWhy: why, Source: "files", Registry: cfg.Registry, Policy: cfg.Policy}
	if cached {
		s.Evaluation = "per_caller"
	}
	switch {
	case cfg.Bundle.Enabled():
		s.Source, s.Registry, s.Policy = "bundle", "", ""
	case cfg.Bundled():
		s.Source = "bundled example"
	case cfg.Registry == "":
		s.Registry = "the bundled example's"
	case cfg.Policy == "":
		s.Policy = "the bundled example's"
	}
	return s
}
