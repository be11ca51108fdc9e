package tracing

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/hooks"
	"github.com/toolgate/toolgate/methods"
	"github.com/toolgate/toolgate/toolcall"
)

// WrapHook returns h with each half running in its span (StartHook). When t
// is off it returns h itself.
func (t *Tracer) WrapHook(h hooks.Hook) hooks.Hook {
	if !t.Enabled() {
		return h
	}
	name := h.Name
	if before := h.Before; before != nil {
		h.Before = func(ctx context.Context, call *hooks.CallContext) (hooks.Verdict, error) {
			ctx, span := t.StartHook(ctx, name, "before")
			defer span.End()
			v, err := before(ctx, call)
			switch {
			case err != nil:
				span.Fail("hook_failed")
			case v.Denied:
				span.SetString(AttrOutcome, "denied")
			case v.Result != nil:
				span.SetString(AttrOutcome, "answered")
			}
			return v, err
		}
	}
	if after := h.After; after != nil {
		h.After = func(ctx context.Context, call *hooks.CallContext, end *hooks.Record) error {
			ctx, span := t.StartHook(ctx, name, "after")
			defer span.End()
			err := after(ctx, call, end)
			if err != nil {
				span.Fail("hook_failed")
			}
			return err
		}
	}
	return h
}

// Upstream is implemented by a Method that calls a tool of an upstream MCP
// server; its span is then a client span named after that tool.
type Upstream interface {
	UpstreamTool() string
}

// WrapMethods returns ms with each method's invocation running in its span
// (StartMethod). When t is off it returns ms itself.
func (t *Tracer) WrapMethods(ms methods.Set) methods.Set {
	if !t.Enabled() {
		return ms
	}
	return tracedMethods{t: t, ms: ms}
}

type tracedMethods struct {
	t  *Tracer
	ms methods.Set
}

func (m tracedMethods) Method(name string) (methods.Method, bool) {
	x, ok := m.ms.Method(name)
	if !ok {
		return x, ok
	}
	up := ""
	if u, ok := x.(Upstream); ok {
		up = u.UpstreamTool()
	}
	return tracedMethod{Method: x, t: m.t, name: name, upstream: up}, true
}

type tracedMethod struct {
	methods.Method
	t              *Tracer
	name, upstream string
}

func (m tracedMethod) Bind(args []toolcall.Arg) (methods.Invocation, error) {
	inv, err := m.Method.Bind(args)
	if err != nil || inv == nil {
		return inv, err
	}
	return func(ctx context.Context) (*mcp.CallToolResult, error) {
		ctx, span := m.t.StartMethod(ctx, m.name, m.upstream)
		defer span.End()
		res, err := inv(ctx)
		switch {
		case err != nil:
			span.Fail("method_failed")
		case res != nil && res.IsError:
			span.Fail("tool_error")
		}
		return res, err
	}, nil
}
