// The console's JSON endpoints, with the bearer token of this tab.
const KEY = 'toolgate.console.token';

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

export class HTTPError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  const t = token.get();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

export async function api(path, { method = 'GET', body } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch('/console/api/' + path, init);
  let data = null;
  try { data = await res.json(); } catch { /* not JSON */ }
  if (!res.ok) throw new HTTPError(res.status, (data && data.error) || res.statusText);
  return data;
}

// stream reads server-sent events with the bearer token (EventSource
// cannot send one) and calls onEvent(type, data) for each; it resolves
// when the stream ends.
export async function stream(path, onEvent, signal) {
  const res = await fetch('/console/api/' + path, { headers: headers({ Accept: 'text/event-stream' }), signal });
  if (!res.ok) throw new HTTPError(res.status, res.statusText);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const chunk = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let type = 'message', data = '';
      for (const line of chunk.split('\n')) {
        if (line.startsWith('event: ')) type = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (data) onEvent(type, JSON.parse(data));
    }
  }
}

// el builds an element: el('td', {class: 'x'}, 'text', child...).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}
