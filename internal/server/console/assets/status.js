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
  if (s.shadow) {
    const sh = s.shadow;
    rows.push(['Shadow candidate', sh.error ? `not loaded, never evaluated: ${sh.error}` : sh.candidate]);
    if (sh.refused) rows.push(['Shadow candidate refused', `${sh.refused} (the one before it is still compared)`]);
    const kinds = Object.entries(sh.differences || {}).filter(([, n]) => n > 0).map(([k, n]) => `${k}: ${n}`);
    rows.push(['Shadow differences', `${kinds.length ? kinds.join(', ') : 'none'} (${sh.compared} compared, ${sh.dropped} dropped, ${sh.candidate_failures || 0} candidate failures)`]);
  }
  const dl = document.getElementById('status');
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}
