// The console: sign-in, then one view at a time, chosen by the URL's hash.
import { api, token, stream, HTTPError } from './api.js';
import { startOAuth, finishOAuth } from './signin.js';
import * as matrix from './matrix.js';
import * as approvals from './approvals.js';
import * as activity from './activity.js';
import * as status from './status.js';

const views = { matrix, approvals, activity, status };
const $ = (id) => document.getElementById(id);
let me = null;
let live = null;

export function flash(msg) {
  const f = $('flash');
  f.textContent = msg || '';
  f.hidden = !msg;
}

function showOnly(id) {
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== id;
}

// routed counts route calls: a view that finishes rendering after a
// later route began (a slow matrix, then a click on another view) does
// not mark the page ready for itself.
let routed = 0;

async function route() {
  const n = ++routed;
  if (!me) { showOnly('view-signin'); return; }
  let name = location.hash.slice(1);
  if (!views[name] || (!me.operator && name !== 'approvals')) name = me.operator ? 'matrix' : 'approvals';
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  showOnly('view-' + name);
  document.body.dataset.view = name;
  delete document.body.dataset.ready;
  try {
    await views[name].show(me);
    if (n === routed) document.body.dataset.ready = name;
  } catch (e) { if (n === routed) fail(e); }
}

function fail(e) {
  if (e instanceof HTTPError && e.status === 401) { signOut('Your token was not accepted; sign in again.'); return; }
  flash(e.message || String(e));
}

function signOut(msg) {
  token.clear();
  me = null;
  if (live) live.abort();
  $('nav').hidden = true;
  $('who').hidden = true;
  flash(msg);
  route();
}

// liveStream keeps one stream open, reconnecting after a drop: the
// activity stream for an operator (its events go to the activity and
// approvals views), the approvals stream for anyone else.
async function liveStream(path) {
  live = new AbortController();
  const signal = live.signal;
  let wait = 500;
  while (!signal.aborted) {
    try {
      activity.connected(true);
      approvals.changed(); // what changed while the stream was down
      await stream(path, (type, data) => {
        wait = 500;
        if (type === 'activity') activity.add(data);
        if (type === 'approvals' || (type === 'activity' && (data.outcome === 'held' || data.approval_id))) approvals.changed();
      }, signal);
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof HTTPError && e.status === 401) { fail(e); return; }
    }
    activity.connected(false);
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 10000);
  }
}

async function signedIn() {
  me = await api('me');
  $('who-name').textContent = me.subject + (me.operator ? ' (operator)' : '');
  $('who').hidden = false;
  $('nav').hidden = false;
  for (const a of document.querySelectorAll('nav a[data-operator]')) a.hidden = !me.operator;
  flash('');
  liveStream(me.operator ? 'activity' : 'approvals/events');
  await route();
}

async function init() {
  $('signout').addEventListener('click', () => signOut(''));
  $('token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    token.set($('token').value.trim());
    $('token').value = '';
    try { await signedIn(); } catch (e) { token.clear(); me = null; flash(e instanceof HTTPError && e.status === 401 ? 'That token was not accepted.' : e.message); }
  });
  window.addEventListener('hashchange', route);
  let config = { oauth: null };
  try { config = await api('config'); } catch (e) { flash(e.message); }
  if (config.oauth) {
    $('oauth').hidden = false;
    $('oauth-issuer').textContent = config.oauth.issuer;
    $('oauth-start').addEventListener('click', () => startOAuth(config.oauth).catch((e) => flash(e.message)));
    try { await finishOAuth(config.oauth); } catch (e) { flash(e.message); }
  }
  if (token.get()) {
    try { await signedIn(); return; } catch (e) { if (e instanceof HTTPError && e.status === 401) token.clear(); else flash(e.message); }
  }
  me = null;
  await route();
  document.body.dataset.ready = 'signin';
}

init();
