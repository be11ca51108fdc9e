// Package httpserve serves a toolgate-governed MCP server over streamable
// HTTP (docs/contract.md §8): the MCP endpoint at /mcp behind bearer tokens, GET
// /healthz, an optional /metrics, and graceful shutdown.
//
// What an unauthenticated client can make it do is bounded by what it
// sends (docs/contract.md §11): a body is read once through a 4 MiB limit before
// anything decodes it; sessions expire when idle and are capped; bodies
// have a read deadline, idle connections close, connections are capped;
// Host (on loopback) and Origin are checked on every path; /healthz tells
// anyone only status and revision, and /metrics is for the operator role.
// Options documents each limit and its default.
//
// The caller of each request comes from its bearer token, through the
// identity package's caller sources (docs/contract.md §8, §12): a tokens file
// (Options.Tokens, identity.LoadTokens) and, with Options.JWT, an OAuth 2.1
// authorization server whose JWT access tokens identity verifies; the
// Protected Resource Metadata is then served too. This package keeps the
// transport: it asks the sources once per request, answers their refusals
// and hands the caller to the adapter (wire it with CallerFromRequest).
//
//	tokens, err := identity.LoadTokens("tokens.yaml")
//	...
//	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: methods, Caller: httpserve.CallerFromRequest})
//	srv := httpserve.New(httpserve.Options{
//		MCPServer: func(transport []mcpadapter.Layer) *mcp.Server {
//			s, _ := a.NewServerWith(&mcp.Implementation{Name: "toolgate"}, nil, mcpadapter.Layers{Transport: transport})
//			return s
//		},
//		Tokens: tokens,
//	})
//	err = srv.ListenAndServe(ctx, "127.0.0.1:8787", nil)
package httpserve
