// Package httpserve serves a toolgate-governed MCP server over streamable
// HTTP (SPEC §8): the MCP endpoint at /mcp behind bearer tokens, GET
// /healthz, an optional /metrics, and graceful shutdown.
//
// The caller of each request comes from its bearer token: wire the adapter
// with CallerFromRequest.
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
