// Who can see what: callers × tools, one page of rows at a time; a cell
// opens its explanation (the serving pipeline's explain).
import { api, el } from './api.js';

const $ = (id) => document.getElementById(id);
const PAGE = 50;
const LABELS = {
  visible: 'visible', hidden_base: 'hidden (base)', hidden_override: 'hidden (policy)', approval: 'needs approval',
  denied: 'denied', answered: 'answered by a rule', failed: 'failed', nobody: 'nobody',
};
const state = { callers: [], selected: new Set(), q: '', meta: null, offset: 0, total: 0, wired: false, loaded: false, timer: 0, seq: 0 };

const key = (c) => c.subject + '|' + [...(c.roles || [])].sort().join(',');
const label = (c) => c.subject + ((c.roles && c.roles.length) ? ` [${c.roles.join(', ')}]` : '');

function addCaller(c, selected = true) {
  if (!state.callers.some((k) => key(k) === key(c))) state.callers.push({ subject: c.subject, roles: c.roles || [], from: c.from });
  if (selected) state.selected.add(key(c));
}

function renderCallers() {
  $('caller-list').replaceChildren(...state.callers.map((c, i) => {
    const id = 'caller-' + i;
    const box = el('input', { type: 'checkbox', id, checked: state.selected.has(key(c)) });
    box.addEventListener('change', () => {
      if (box.checked) state.selected.add(key(c)); else state.selected.delete(key(c));
      state.offset = 0;
      reload();
    });
    return el('span', {}, box, el('label', { for: id }, label(c) + (c.from ? ` (${c.from})` : '')));
  }));
}

// reload loads the page of rows again, saying in the summary line when it
// cannot (the error stays out of the console's error log).
function reload() {
  load().catch((e) => { $('matrix-summary').textContent = e.message; });
}

function wire(me) {
  state.wired = true;
  $('caller-add').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const subject = $('caller-subject').value.trim();
    if (!subject) return;
    const roles = $('caller-roles').value.split(',').map((s) => s.trim()).filter(Boolean);
    addCaller({ subject, roles, from: 'typed' });
    $('caller-subject').value = ''; $('caller-roles').value = '';
    renderCallers();
    state.offset = 0;
    reload();
  });
  $('callers-file').addEventListener('change', async (ev) => {
    const file = ev.target.files[0];
    if (!file) return;
    try {
      const { callers } = await api('callers/parse', { method: 'POST', body: { document: await file.text() } });
      for (const c of callers) addCaller(c);
      $('matrix-summary').textContent = `${callers.length} callers loaded from ${file.name}`;
    } catch (e) {
      $('matrix-summary').textContent = e.message;
      return;
    }
    renderCallers();
    state.offset = 0;
    reload();
  });
  $('matrix-q').addEventListener('input', () => {
    clearTimeout(state.timer);
    state.timer = setTimeout(() => { state.q = $('matrix-q').value; state.offset = 0; reload(); }, 200);
  });
  $('matrix-apply').addEventListener('click', () => {
    const raw = $('matrix-meta').value.trim();
    try { state.meta = raw ? JSON.parse(raw) : null; } catch { $('matrix-summary').textContent = '_meta is not JSON'; return; }
    state.q = $('matrix-q').value; state.offset = 0; reload();
  });
  $('matrix-prev').addEventListener('click', () => { state.offset = Math.max(0, state.offset - PAGE); reload(); });
  $('matrix-next').addEventListener('click', () => { if (state.offset + PAGE < state.total) { state.offset += PAGE; reload(); } });
  addCaller({ subject: me.subject, roles: me.roles, from: 'you' });
}

export async function show(me) {
  if (!state.wired) wire(me);
  if (!state.loaded) {
    state.loaded = true;
    const { callers } = await api('callers');
    for (const c of callers) addCaller(c);
  }
  renderCallers();
  await load();
}

function selectedCallers() {
  return state.callers.filter((c) => state.selected.has(key(c))).map((c) => ({ subject: c.subject, roles: c.roles }));
}

async function load() {
  const callers = selectedCallers();
  const body = { callers, q: state.q, offset: state.offset, limit: PAGE };
  if (state.meta) body.meta = state.meta;
  const seq = ++state.seq;
  const m = await api('matrix', { method: 'POST', body });
  if (seq !== state.seq) return; // a later request (typing) answers instead
  state.total = m.total;
  const head = el('tr', {}, el('th', { scope: 'col' }, 'tool, prompt or resource'), el('th', { scope: 'col' }, 'section'),
    ...m.columns.map((c) => el('th', { scope: 'col', title: `grant decision: ${c.mode}, ${c.evaluation}` }, label(c.caller))));
  $('matrix').tHead.replaceChildren(head);
  const rows = m.rows.map((r) => el('tr', {},
    el('th', { scope: 'row' }, r.kind ? el('span', { class: 'muted' }, `${r.kind} `) : null, r.name, r.driver ? el('span', { class: 'muted' }, ` (driver ${r.driver})`) : null),
    el('td', {}, r.section || ''),
    ...r.cells.map((s, i) => el('td', {}, el('button', {
      type: 'button', class: 'cell ' + s, 'data-tool': r.name, 'data-kind': r.kind || 'tool', 'data-caller': callers[i].subject, 'data-state': s,
      'aria-label': `${r.kind || 'tool'} ${r.name} for ${label(callers[i])}: ${LABELS[s] || s}` + (r.kind ? '' : '; explain'),
      // Prompts and resources: `toolgate explain --prompt/--resource` says why.
      onclick: r.kind ? null : (ev) => explain(ev.currentTarget, callers[i], r.name).catch((e) => { $('matrix-summary').textContent = e.message; }),
    }, LABELS[s] || s)))));
  $('matrix').tBodies[0].replaceChildren(...rows);
  const last = Math.min(m.offset + m.rows.length, m.total);
  $('matrix-summary').textContent = m.total ? `tools ${m.offset + 1}–${last} of ${m.total}` : 'no tool matches';
  $('matrix-prev').disabled = m.offset === 0;
  $('matrix-next').disabled = last >= m.total;
}

function locs(ls) { return (ls || []).map((l) => `${l.file}:${l.row}`).join(', '); }

async function explain(button, caller, tool) {
  for (const b of document.querySelectorAll('#matrix .cell[aria-pressed]')) b.removeAttribute('aria-pressed');
  button.setAttribute('aria-pressed', 'true');
  const body = { caller, tool };
  if (state.meta) body.meta = state.meta;
  const x = await api('explain', { method: 'POST', body });
  const c = x.call || {};
  const rows = [
    ['Caller', label(caller)],
    ['Tool', tool + (c.method ? ` (method ${c.method})` : '')],
    ['Grant decision', x.mode + (x.override_rules && x.override_rules.length ? ` — ${locs(x.override_rules)}` : '')],
    ['Base decision', x.row ? `${x.row.base ? 'granted' : 'not granted'}: ${x.row.base_why}` : 'no row has this name'],
    ['Stage', c.stage],
    ['Answer', c.answer || (c.stage === 'run' ? 'the arguments are bound and the method runs' : '')],
    ['Decided by', c.decided_by],
    ['Rules', locs(c.rules) || 'none: the registry decided'],
  ];
  for (const r of c.reasons || []) rows.push(['Reason', `${r.message} (${locs(r.rules)})`]);
  if (c.approval) rows.push(['Approvers', `${c.approval.approvers.join(', ')}, ttl ${c.approval.ttl}`]);
  if (c.failure) rows.push(['Failure', c.failure]);
  rows.push(['Evaluation', `${x.evaluation}: ${x.evaluation_why}`]);
  $('explain-body').replaceChildren(el('dl', {}, ...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v || '')])));
  $('explain').hidden = false;
}
