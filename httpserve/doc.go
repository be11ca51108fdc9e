// Package httpserve serves a toolgate-governed MCP server over streamable
// HTTP (SPEC §8): the MCP endpoint at /mcp behind bearer tokens, GET
// /healthz, an optional /metrics, and graceful shutdown.
//
// What an unauthenticated client can make it do is bounded by what it
// sends (SPEC §11): a body is read once through a 4 MiB limit before
// anything decodes it; sessions expire when idle and are capped; bodies
// have a read deadline, idle connections close, connections are capped;
// Host (on loopback) and Origin are checked on every path; /healthz tells
// anyone only status and revision, and /metrics is for the operator role.
// Options documents each limit and its default.
//
// The caller of each request comes from its bearer token: wire the adapter
// with CallerFromRequest. Tokens come from a tokens file (Options.Tokens)
// and, with Options.JWT, from an OAuth 2.1 authorization server whose JWT
// access tokens are verified by the identity package (SPEC §12); the
// Protected Resource Metadata is then served too.
//
//	tokens, err := httpserve.LoadTokens("tokens.yaml")
//	...
//	a := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: methods, Caller: httpserve.CallerFromRequest})
//	srv := httpserve.New(httpserve.Options{
//		Server: a.NewServer(&mcp.Implementation{Name: "toolgate"}, nil),
//		Tokens: tokens,
//	})
//	err = srv.ListenAndServe(ctx, "127.0.0.1:8787", nil)
//
// A tokens file maps the SHA-256 hex digest of each token to its identity,
// in JSON or YAML; the tokens themselves are never stored nor logged:
//
//	# printf %s "$TOKEN" | sha256sum
//	9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08:
//	  subject: alice
//	  roles: [manager]
//	  claims: {team: payments}
package httpserve
