package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/internal/jsonx"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolcall"
)

// promptDecision is the grant decision for a prompts method.
func (a *Adapter) promptDecision(ctx context.Context, caller *toolcall.Caller, rev *engine.Revision, method, name string, args json.RawMessage, meta mcp.Meta) *engine.GrantDecision {
	return rev.Grant(ctx, caller, engine.Request{Method: method, Prompt: name, Arguments: args, Meta: engine.BoundMeta(rawMeta(meta))})
}

// listPrompts answers prompts/list: the prompts the caller may see, each
// as its upstream lists it, under toolgate's name.
func (a *Adapter) listPrompts(ctx context.Context, caller *toolcall.Caller, req *mcp.ListPromptsRequest) mcp.Result {
	res := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
	res.CacheScope = "private"
	list := &wirePrompts{ListPromptsResult: res, revision: requestRevision(req)}
	if caller == nil {
		return list
	}
	rev := a.opts.Revisions.Current()
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	d := a.promptDecision(ctx, caller, rev, engine.MethodPromptsList, "", nil, meta)
	if d.Outcome == engine.Failed {
		a.log.Error("prompts/list: grant decision failed; "+a.fallbackText(),
			slog.String("subject", caller.Subject), slog.String("revision", rev.String()), slog.Any("error", d.Err))
		if a.opts.ListFallback == hooks.ListFallbackNone {
			return list
		}
	}
	prompts := rev.Registry().Prompts
	for _, i := range d.VisiblePrompts() {
		res.Prompts = append(res.Prompts, promptDescriptor(&prompts[i]))
		list.prompts = append(list.prompts, promptDefinition(&prompts[i]))
	}
	return list
}

// wirePrompts is a prompts/list result whose prompts are sent as their
// upstreams list them (promptDefinition: every member kept, an argument's
// required false too), and without the members of a revision after the
// client's (ttlMs and cacheScope are 2026-07-28's).
type wirePrompts struct {
	*mcp.ListPromptsResult
	prompts  []json.RawMessage
	revision string
}

func (l *wirePrompts) MarshalJSON() ([]byte, error) {
	head := *l.ListPromptsResult
	head.Prompts = []*mcp.Prompt{}
	b, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if l.revision < multiRoundTripRevision {
		delete(m, "ttlMs")
		delete(m, "cacheScope")
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, p := range l.prompts {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(p)
	}
	buf.WriteByte(']')
	m["prompts"] = buf.Bytes()
	return jsonx.Marshal(m)
}

// promptDefinition is the upstream's definition of p as it listed it,
// under toolgate's name.
func promptDefinition(p *registry.Prompt) json.RawMessage {
	var m map[string]json.RawMessage
	if len(p.Definition) > 0 {
		_ = json.Unmarshal(p.Definition, &m)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m["name"], _ = jsonx.Marshal(p.Name)
	b, err := jsonx.Marshal(m)
	if err != nil {
		b, _ = jsonx.Marshal(promptDescriptor(p))
	}
	return b
}

func (a *Adapter) fallbackText() string {
	if a.opts.ListFallback == hooks.ListFallbackNone {
		return "listing nothing (--list-fallback none)"
	}
	return "listing the base decision"
}

// promptDescriptor is the upstream's definition under toolgate's name.
func promptDescriptor(p *registry.Prompt) *mcp.Prompt {
	out := &mcp.Prompt{}
	if len(p.Definition) > 0 {
		_ = json.Unmarshal(p.Definition, out)
	}
	out.Name = p.Name
	return out
}

func (a *Adapter) getPrompt(ctx context.Context, caller *toolcall.Caller, req *mcp.GetPromptRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, unknownPrompt("")
	}
	name := req.Params.Name
	if caller == nil {
		return nil, unknownPrompt(name)
	}
	rec := &hooks.CatalogRecord{Method: engine.MethodPromptsGet, Caller: caller, Name: name, Start: time.Now()}
	defer a.observeCatalog(ctx, rec)
	rev := a.opts.Revisions.Current()
	rec.Revision = rev
	var args json.RawMessage
	if req.Params.Arguments != nil {
		args, _ = jsonx.Marshal(req.Params.Arguments)
	}
	d := a.promptDecision(ctx, caller, rev, engine.MethodPromptsGet, name, args, req.Params.Meta)
	rec.Outcome = d.Outcome
	ok, err := d.PromptAllowed(name)
	if err != nil {
		rec.Err = err
		a.log.Error("prompts/get: grant decision failed; refused",
			slog.String("subject", caller.Subject), slog.String("revision", rev.String()), slog.Any("error", err))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: AnswerPromptUnverified}
	}
	if !ok {
		return nil, unknownPrompt(name)
	}
	p := rev.Prompt(name)
	rec.Upstream, rec.Allowed = p.Upstream, true
	res, err := a.opts.Catalog.GetPrompt(ctx, p, req.Params)
	if err != nil {
		rec.Err = err
		return nil, a.relayError("prompts/get", err)
	}
	return catalogResult(ctx, a, rev, caller, engine.Request{Method: engine.MethodPromptsGet, Prompt: name, Arguments: args, Meta: engine.BoundMeta(rawMeta(req.Params.Meta))}, res, rec)
}

// relayError is what the caller gets for a failed relay: the upstream's
// own JSON-RPC error, else the generic internal error (the detail is
// logged).
func (a *Adapter) relayError(method string, err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	a.log.Error(method+": relay failed", slog.Any("error", err))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: AnswerCatalogInternal}
}
