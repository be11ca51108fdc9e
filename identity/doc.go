// Package identity owns toolgate's caller sources: who a request is made on
// behalf of (docs/contract.md §2, §8, §12). Static is the one caller of a stdio server
// (--as, --role); Tokens is a tokens file, mapping the SHA-256 of each
// bearer token to a caller; JWT verifies access tokens issued by the
// organisation's OAuth 2.1 / OpenID Connect authorization server, toolgate
// being the resource server; Chain asks the tokens file, then JWT, for each
// HTTP request and says which source answered.
//
// A tokens file maps the SHA-256 hex digest of each token to its caller,
// in JSON or YAML; the tokens themselves are never stored nor logged:
//
//	# printf %s "$TOKEN" | sha256sum
//	9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08:
//	  subject: alice
//	  roles: [manager]
//	  claims: {team: payments}
//
// The transport calls an Authenticator, normally a Chain, once per request:
//
//	chain := identity.Chain{Tokens: tokens, JWT: verifier}
//	caller, err := chain.Authenticate(ctx, r)
//	if err != nil {
//		status, challenge := identity.Answer(err, identity.MetadataURL(settings.Resource))
//		// 401 + WWW-Authenticate, or 503 + Retry-After; log err (never the token)
//	}
//
// # Contract
//
//   - A request without a token is nobody (nil caller), unless JWT
//     verification is configured and anonymous requests are not allowed:
//     then ErrNoToken, answered 401 `Bearer resource_metadata="…"`.
//   - The tokens file is asked first, by the token's SHA-256; then the JWT
//     verifier. A token neither knows is an *InvalidTokenError, answered 401
//     `Bearer error="invalid_token", resource_metadata="…"`. Its Reason is
//     for the log; no error holds the token.
//   - A JWT is accepted when its signature verifies with a key of the
//     issuer (RS256/384/512, PS256/384/512, ES256/384, EdDSA only; none and
//     HMAC refused, also when a key set holds a symmetric key), `iss` is the
//     issuer, `aud` holds an accepted audience, `exp` is in the future and
//     `nbf`/`iat` are not, with Leeway (60 s).
//   - Keys come from the issuer's metadata (OpenID Connect Discovery, else
//     RFC 8414) or a JWKS file or URL. A token whose kid is unknown makes
//     the verifier fetch the key set again, at most every RefetchInterval
//     (30 s); a file is re-read when it changes; a set older than
//     MaxKeySetAge is fetched again. When a key leaves the set, the
//     verified-token cache is emptied.
//   - Until a key set has been fetched once (the issuer is down at start),
//     tokens get ErrUnavailable (503, Retry-After) and the fetch is retried
//     at most every RetryInterval: toolgate starts and serves the tokens
//     file meanwhile, and JWT callers as soon as the issuer answers.
//   - A policy sees exactly what runs: claims are decoded exactly
//     (numbers keep their text), and a claims set that cannot be
//     represented (a member named twice, a number beyond the policy
//     engine's range) refuses the token instead of becoming another
//     caller. Claims reach the policy whole, never trimmed like `_meta`
//     (docs/contract.md §12); a subject or role holding a control
//     character refuses the token.
//   - Verified tokens are cached by SHA-256 (DefaultCacheSize entries,
//     least recently used out), never past their `exp`.
//
// Everything here is safe for concurrent use. Callers returned by a JWT are
// shared with its cache: read them, never modify them.
package identity
