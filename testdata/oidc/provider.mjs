// A real OpenID provider (oidc-provider, pinned in package-lock.json) on
// loopback for the identity package's tests. scripts/oidc-setup installs it.
//
//   node provider.mjs [--port N] [--resource URI] [--exit-with-stdin]
//
// It starts two providers that share one set of signing keys:
//   - "issuer", on --port (0: any free port), the one the tests trust;
//   - "other", on another port, an issuer the tests do not trust: its tokens
//     carry a signature that verifies but the wrong `iss`.
// Each issues JWT access tokens (RFC 9068) through the client_credentials
// grant with resource indicators (RFC 8707): `resource` must be one of the
// resource URIs below, and becomes the token's `aud`.
//
// Clients (client_secret_basic / client_secret_post):
//   alice-app / alice-secret : roles ["manager","reader"], realm_access.roles too
//   bob-app   / bob-secret   : roles "reader" (a space-separated string)
//   nobody-app/ nobody-secret: no roles claim at all
//
// For the credentials toward upstreams (docs/contract.md §17):
//   gateway-app / gateway-secret (--gateway-secret S): toolgate's own client toward upstreams; it
//     may use client_credentials and token exchange (RFC 8693, registered
//     below with registerGrantType). --upstream-resource URI (default
//     http://127.0.0.1/upstream) is the upstream's resource; its tokens
//     live --upstream-ttl seconds (default 60).
//   Token exchange takes a subject_token that is an access token of this
//   issuer for RESOURCE (toolgate's), and answers a JWT signed with the
//   issuer's key for the upstream (aud: the requested resource or
//   audience, which must be the upstream's), with the subject token's sub,
//   client_id gateway-app and act {sub: gateway-app}. It refuses (400
//   invalid_grant) a subject token that does not verify, and the subject
//   nobody-app ("exchange not permitted for this subject").
//
// POST /__rotate on the trusted issuer switches it to a new signing key:
// from then on it signs with key "rsa-2" and publishes [rsa-2, rsa-1, ec-1]
// (the old key stays published, as issuers do while old tokens live).
//
// When both listen it prints one JSON line on stdout:
//   {"issuer":"http://127.0.0.1:P","other":"http://127.0.0.1:Q",
//    "resource":"http://127.0.0.1:P/…"}
// and then serves until it gets SIGTERM (or SIGINT), or, with
// --exit-with-stdin, until its stdin closes: the tests' harness holds it by
// stdin, so that it ends with the test process; started by hand in the
// background (`node provider.mjs &`), it keeps serving.
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';

import Provider, { errors } from 'oidc-provider';
import { SignJWT, createLocalJWKSet, jwtVerify, importJWK } from 'jose';
import { randomUUID } from 'node:crypto';

const args = process.argv.slice(2);
const arg = (name, def) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : def);
const port = Number(arg('--port', '0'));

// RESOURCE is toolgate's resource URI (--resource; RS256 tokens);
// RESOURCE_ES gets ES256 tokens; OTHER_RESOURCE is some other server.
const RESOURCE = arg('--resource', 'http://127.0.0.1/mcp');
const RESOURCE_ES = 'http://127.0.0.1/mcp-es';
const UPSTREAM_RESOURCE = arg('--upstream-resource', 'http://127.0.0.1/upstream');
const UPSTREAM_TTL = Number(arg('--upstream-ttl', '60'));
const GATEWAY_SECRET = arg('--gateway-secret', 'gateway-secret');
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const OTHER_RESOURCE = 'https://other.example/mcp';

function privateJWK(type, options, kid, alg) {
  const { privateKey } = generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

const rsa1 = privateJWK('rsa', { modulusLength: 2048 }, 'rsa-1', 'RS256');
const ec1 = privateJWK('ec', { namedCurve: 'P-256' }, 'ec-1', 'ES256');
const rsa2 = privateJWK('rsa', { modulusLength: 2048 }, 'rsa-2', 'RS256');

const roles = {
  'alice-app': { roles: ['manager', 'reader'], realm_access: { roles: ['manager', 'reader'] }, email: 'alice@example.com' },
  'bob-app': { roles: 'reader', email: 'bob@example.com' },
  'nobody-app': {},
};

function newProvider(issuer, keys) {
  const provider = new Provider(issuer, {
    jwks: { keys },
    clients: [...Object.keys(roles).map((id) => ({
      client_id: id,
      client_secret: id.replace('-app', '-secret'),
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
    })), {
      client_id: 'gateway-app',
      client_secret: GATEWAY_SECRET,
      grant_types: ['client_credentials', TOKEN_EXCHANGE],
      redirect_uris: [],
      response_types: [],
    }],
    scopes: ['openid', 'tools:read', 'tools:call'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        getResourceServerInfo(_ctx, resourceIndicator) {
          if (resourceIndicator === UPSTREAM_RESOURCE) {
            return {
              scope: 'tools:read tools:call', audience: UPSTREAM_RESOURCE, accessTokenTTL: UPSTREAM_TTL,
              accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } },
            };
          }
          if (resourceIndicator !== RESOURCE && resourceIndicator !== RESOURCE_ES && resourceIndicator !== OTHER_RESOURCE) {
            throw new errors.InvalidTarget();
          }
          return {
            scope: 'tools:read tools:call',
            audience: resourceIndicator,
            accessTokenTTL: 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: resourceIndicator === RESOURCE_ES ? 'ES256' : 'RS256' } },
          };
        },
      },
    },
    extraTokenClaims(_ctx, token) {
      return roles[token.clientId];
    },
  });
  provider.on('server_error', (_ctx, err) => console.error('provider server_error:', err));
  registerTokenExchange(provider, issuer, keys);
  return provider;
}

// registerTokenExchange adds the RFC 8693 grant: the provider has
// authenticated the client (gateway-app) before the handler runs.
function registerTokenExchange(provider, issuer, keys) {
  const publicKeys = keys.map(({ d, p, q, dp, dq, qi, ...pub }) => pub);
  const jwks = createLocalJWKSet({ keys: publicKeys });
  const signing = keys[0];
  const invalid = (desc) => new errors.InvalidGrant(desc);
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const { params, client } = ctx.oidc;
    if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
      throw new errors.InvalidRequest('subject_token_type must be an access token');
    }
    let subject;
    try {
      ({ payload: subject } = await jwtVerify(params.subject_token, jwks, { issuer, audience: [RESOURCE, RESOURCE_ES] }));
    } catch (err) {
      throw invalid(`subject_token does not verify: ${err.code || 'invalid'}`);
    }
    if (subject.sub === 'nobody-app') {
      throw invalid('exchange not permitted for this subject');
    }
    const aud = params.resource || params.audience;
    if (aud !== UPSTREAM_RESOURCE) {
      throw new errors.InvalidTarget('the token is only for the upstream');
    }
    const now = Math.floor(Date.now() / 1000);
    const key = await importJWK(signing, signing.alg);
    const accessToken = await new SignJWT({
      client_id: client.clientId, scope: params.scope || 'tools:read tools:call', act: { sub: client.clientId },
    }).setProtectedHeader({ alg: signing.alg, kid: signing.kid, typ: 'at+jwt' })
      .setIssuer(issuer).setSubject(subject.sub).setAudience(aud).setJti(randomUUID())
      .setIssuedAt(now).setExpirationTime(now + UPSTREAM_TTL)
      .sign(key);
    ctx.body = {
      access_token: accessToken, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: UPSTREAM_TTL,
    };
  }, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope', 'actor_token', 'actor_token_type']);
}

// listen starts an HTTP server whose handler can be swapped (for rotation).
function listen(p) {
  return new Promise((resolve, reject) => {
    const server = http.createServer();
    server.once('error', reject);
    server.listen(p, '127.0.0.1', () => resolve(server));
  });
}

const trusted = await listen(port);
const other = await listen(0);
const issuer = `http://127.0.0.1:${trusted.address().port}`;
const otherIssuer = `http://127.0.0.1:${other.address().port}`;

let current = newProvider(issuer, [rsa1, ec1]).callback();
trusted.on('request', (req, res) => {
  if (req.method === 'POST' && req.url === '/__rotate') {
    current = newProvider(issuer, [rsa2, rsa1, ec1]).callback();
    res.writeHead(204).end();
    return;
  }
  current(req, res);
});
const otherHandler = newProvider(otherIssuer, [rsa1, ec1]).callback();
other.on('request', (req, res) => otherHandler(req, res));

process.stdout.write(`${JSON.stringify({
  issuer, other: otherIssuer, resource: RESOURCE, resource_es: RESOURCE_ES, other_resource: OTHER_RESOURCE,
  upstream_resource: UPSTREAM_RESOURCE,
})}\n`);

function stop() {
  trusted.close();
  other.close();
  trusted.closeAllConnections();
  other.closeAllConnections();
  process.exit(0);
}
if (args.includes('--exit-with-stdin')) {
  process.stdin.on('end', stop);
  process.stdin.resume();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
