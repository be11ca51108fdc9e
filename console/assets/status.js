// Revision and health: what is serving, from where, and how it decides.
import { api, el } from './api.js';

export async function show() {
  const s = await api('status');
  const mode = s.evaluation === 'per_caller' ? 'memoised per caller' : 'evaluated per call';
  const rows = [
    ['Status', s.status],
    ['Revision', `${s.revision} (${s.hash})`],
    ['Loaded at', s.loaded_at],
    ['Source', s.source + (s.registry ? ` — registry ${s.registry}` : '') + (s.policy ? `, policies ${s.policy}` : '')],
    ['Tools', String(s.tools)],
    ['Decision mode', `${mode}: ${s.evaluation_why}`],
    ['Reloads', `${s.reloads} (${s.reload_failures} failed)`],
    ['Last reload error', s.last_error ? `${s.last_error} (${s.last_error_at})` : 'none'],
  ];
  const dl = document.getElementById('status');
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}
