// Sign-in: a pasted bearer token, or OAuth 2.1 authorization code with
// PKCE (S256) as a public client when the server names an issuer.
import { token } from './api.js';

const PKCE = 'toolgate.console.pkce';

function b64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function random() { return b64url(crypto.getRandomValues(new Uint8Array(32))); }

async function metadata(issuer) {
  const base = issuer.replace(/\/$/, '');
  for (const p of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const res = await fetch(base + p);
    if (res.ok) return res.json();
  }
  throw new Error('the issuer publishes no metadata');
}

function redirectURI() { return location.origin + '/console/'; }

export async function startOAuth(oauth) {
  const md = await metadata(oauth.issuer);
  const verifier = random();
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const state = random();
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state, token_endpoint: md.token_endpoint }));
  const u = new URL(md.authorization_endpoint);
  const q = {
    response_type: 'code', client_id: oauth.client_id, redirect_uri: redirectURI(), state,
    code_challenge: challenge, code_challenge_method: 'S256',
    scope: (oauth.scopes && oauth.scopes.length ? oauth.scopes : ['openid']).join(' '),
  };
  if (oauth.resource) q.resource = oauth.resource;
  for (const [k, v] of Object.entries(q)) u.searchParams.set(k, v);
  location.assign(u.toString());
}

// finishOAuth exchanges the code of a redirect back, if this is one; it
// returns true when it signed in.
export async function finishOAuth(oauth) {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') && !params.has('error')) return false;
  history.replaceState(null, '', location.pathname + location.hash);
  const saved = JSON.parse(sessionStorage.getItem(PKCE) || 'null');
  sessionStorage.removeItem(PKCE);
  if (params.has('error')) throw new Error('sign-in refused: ' + params.get('error'));
  if (!saved || saved.state !== params.get('state')) throw new Error('sign-in answer does not match this tab');
  const body = new URLSearchParams({
    grant_type: 'authorization_code', code: params.get('code'), redirect_uri: redirectURI(),
    client_id: oauth.client_id, code_verifier: saved.verifier,
  });
  if (oauth.resource) body.set('resource', oauth.resource);
  const res = await fetch(saved.token_endpoint, { method: 'POST', body });
  const data = await res.json().catch(() => ({}));
  if (!res.ok || !data.access_token) throw new Error('the token exchange failed');
  token.set(data.access_token);
  return true;
}
