package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/toolcall"
)

// The result rules beyond tools/call (docs/limits.md "Result rules"): the
// results of prompts/get, resources/read and completion/complete, and
// what an upstream (or a Go method) sends the calling client during a
// call — log messages, progress messages, sampling and elicitation
// requests — pass the same rules: deny withholds them, redact rewrites
// every string of them a client reads.

// errWithheld is what an upstream's sampling or elicitation request gets
// when the result rules withhold it: nothing of the reasons (they are the
// client's).
var errWithheld = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The request was withheld by the gateway's policy."}

// governed is what the result rules made of a message or result.
type governed[T any] struct {
	out     T        // the value to send: the one given, or redacted
	reasons []string // the deny reasons; the value is withheld
	err     error    // the rules failed: the value is withheld
}

// governValue runs the result rules of rev on v (a result or a relayed
// message's params), for caller's request req. wrap builds input.result
// from v's rules' view (nil: the view itself). The rules run only when
// rev has them.
func governValue[T any](ctx context.Context, rev *engine.Revision, caller *toolcall.Caller, req engine.Request, v T, wrap func(view any) any) governed[T] {
	g := governed[T]{out: v}
	if rev == nil || !rev.HasResultRules() {
		return g
	}
	var sent json.RawMessage
	if wrap == nil {
		sent = sentFor(ctx, v)
	}
	tree, err := sentTree(v, sent)
	if err != nil {
		g.err = fmt.Errorf("encode: %w", err)
		return g
	}
	view, err := ruleView(tree, MaxResultText)
	if err != nil {
		g.err = err
		return g
	}
	if wrap != nil {
		view = wrap(view)
	}
	doc, err := json.Marshal(view)
	if err != nil {
		g.err = fmt.Errorf("encode the result document: %w", err)
		return g
	}
	rd := rev.Result(ctx, caller, req, doc)
	if rd.Err != nil {
		g.err = rd.Err
		return g
	}
	if len(rd.Deny) > 0 {
		for _, r := range rd.Deny {
			g.reasons = append(g.reasons, r.Message)
		}
		return g
	}
	if len(rd.Redact) == 0 {
		return g
	}
	tree, changed, err := redactTree(tree, rd.Redact)
	if err != nil {
		g.err = fmt.Errorf("redact: %w", err)
		return g
	}
	if !changed {
		return g
	}
	raw, err := jsonx.Marshal(tree)
	if err != nil {
		g.err = fmt.Errorf("encode the redacted value: %w", err)
		return g
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		g.err = fmt.Errorf("read the redacted value: %w", err)
		return g
	}
	g.out = out
	if sent != nil {
		// A result as its upstream sent it stays so, redacted
		// (KeepSent): every member of the tree kept, nothing escaped for
		// HTML.
		KeepSent(ctx, any(out), raw)
	}
	return g
}

// catalogResult runs the result rules on the result of a prompts/get,
// resources/read or completion/complete (req says which): the result to
// answer, or the error that withholds it (rec records why).
func catalogResult[T mcp.Result](ctx context.Context, a *Adapter, rev *engine.Revision, caller *toolcall.Caller, req engine.Request, res T, rec *hooks.CatalogRecord) (mcp.Result, error) {
	g := governValue(ctx, rev, caller, req, res, nil)
	if g.err != nil {
		rec.Err = fmt.Errorf("result rules: %w", g.err)
		a.log.Error(req.Method+": result rules failed; the result is withheld",
			slog.String("subject", caller.Subject), slog.String("revision", rev.String()), slog.Any("error", g.err))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: AnswerCatalogInternal}
	}
	if g.reasons != nil {
		msg := strings.TrimPrefix(ResultWithheld(g.reasons), "Error: ")
		rec.Err = errors.New(msg)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	}
	return g.out, nil
}

// relayedDoc is input.result for a message relayed during a call: the
// message's method and its params' rules' view.
func relayedDoc(method string) func(any) any {
	return func(view any) any { return map[string]any{"method": method, "params": view} }
}

// governRelayed runs the result rules of p's call on a message relayed
// to its client (method, params): the params to send, or ok false when
// the message is withheld (the rules denied or failed; logged).
func governRelayed[T any](ctx context.Context, p *peer, method string, params T) (T, bool) {
	if p.call == nil || p.call.Revision == nil || !engineRevision(p.call.Revision).HasResultRules() {
		return params, true
	}
	c := p.call
	req := engine.Request{Method: engine.MethodCall, Tool: c.Name, Arguments: c.Arguments, Meta: c.Meta}
	g := governValue(ctx, engineRevision(c.Revision), c.Caller, req, params, relayedDoc(method))
	switch {
	case g.err != nil:
		p.a.log.Error("toolgate: result rules failed on a relayed message; it is withheld", slog.String("method", method),
			slog.String("tool", c.Name), slog.String("decision_id", c.DecisionID), slog.Any("error", g.err))
		return params, false
	case g.reasons != nil:
		p.a.log.Info("toolgate: a relayed message is withheld by the result rules", slog.String("method", method),
			slog.String("tool", c.Name), slog.String("decision_id", c.DecisionID), slog.Int("reasons", len(g.reasons)))
		return params, false
	}
	return g.out, true
}

// errWithheldMessage: a relayed notification the result rules withheld
// (it is not sent; nobody is told).
var errWithheldMessage = errors.New("mcpadapter: the message was withheld by the result rules")
