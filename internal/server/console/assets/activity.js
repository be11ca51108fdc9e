// Live activity: the audit trail as it happens (never argument values:
// only their hash), filtered, with counts per outcome.
import { api, el } from './api.js';

const $ = (id) => document.getElementById(id);
const MAX = 2000;
const SHOWN = 300;
const events = [];
let lastSeq = 0;
let wired = false;
let queued = false;

export function connected(ok) {
  const s = $('activity-state');
  if (s) s.textContent = ok ? 'live' : 'reconnecting…';
}

export function add(e) {
  if (e.seq <= lastSeq) return; // the backlog again, after a reconnect
  lastSeq = e.seq;
  events.push(e);
  if (events.length > MAX) events.splice(0, events.length - MAX);
  if (!queued && document.body.dataset.view === 'activity') {
    queued = true;
    requestAnimationFrame(() => { queued = false; render(); });
  }
}

export async function show() {
  if (!wired) {
    wired = true;
    for (const id of ['f-subject', 'f-tool', 'f-outcome']) $(id).addEventListener('input', render);
    $('activity-filter').addEventListener('submit', (ev) => ev.preventDefault());
    $('history-form').addEventListener('submit', (ev) => { ev.preventDefault(); showHistory(); });
  }
  render();
}

function render() {
  const f = { subject: $('f-subject').value.trim(), tool: $('f-tool').value.trim(), outcome: $('f-outcome').value };
  // Counts per outcome over the subject and tool filters; the outcome
  // filter chooses the rows shown.
  const scoped = events.filter((e) => (!f.subject || e.subject === f.subject) && (!f.tool || e.tool === f.tool));
  const match = scoped.filter((e) => !f.outcome || e.outcome === f.outcome);
  const counts = {};
  for (const e of scoped) counts[e.outcome] = (counts[e.outcome] || 0) + 1;
  $('activity-counts').replaceChildren(el('span', {}, `calls: ${scoped.length}`),
    ...Object.entries(counts).sort().map(([k, n]) => el('span', { 'data-outcome': k }, `${k}: ${n}`)),
    el('span', {}, `shown: ${Math.min(match.length, SHOWN)}`));
  const rows = match.slice(-SHOWN).reverse().map((e) => el('tr', { 'data-decision': e.decision_id },
    el('td', {}, e.timestamp.replace('T', ' ').replace(/\.\d+Z$/, 'Z')), el('td', {}, e.subject), el('td', {}, e.tool),
    el('td', {}, el('span', { class: 'cell ' + outcomeClass(e.outcome) }, e.outcome)), el('td', {}, e.reason || (e.approved_by ? `approved by ${e.approved_by} (approval ${e.approval_id})` : '')),
    el('td', {}, e.duration_ms.toFixed(1)), el('td', {}, el('code', { title: e.arguments_sha256 }, e.arguments_sha256.slice(0, 12)))));
  $('activity').tBodies[0].replaceChildren(...rows);
}

function outcomeClass(o) {
  return { result: 'visible', answered: 'answered', denied: 'denied', failed: 'failed', refused_gate: 'failed', held: 'approval', limited: 'denied', withheld: 'denied' }[o] || '';
}

// showHistory shows what the subject's input.history holds now, newest
// first: remembered argument values only as their hash.
async function showHistory() {
  const subject = $('f-subject').value.trim();
  const state = $('history-state');
  const body = $('history').tBodies[0];
  body.replaceChildren();
  if (!subject) { state.textContent = 'Name a subject above.'; return; }
  state.textContent = 'loading…';
  try {
    const h = await api(`history?subject=${encodeURIComponent(subject)}&source=${encodeURIComponent($('h-source').value)}`);
    state.textContent = `${h.entries.length} entries for ${h.subject} (${h.source})`;
    body.replaceChildren(...h.entries.map((e) => el('tr', {},
      el('td', {}, e.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')), el('td', {}, e.tool),
      el('td', {}, el('span', { class: 'cell ' + outcomeClass(e.outcome) }, e.outcome)),
      el('td', {}, Object.entries(e.arguments).sort().map(([k, v]) => `${k}: ${v.slice(0, 12)}`).join(', ')))));
  } catch (err) {
    state.textContent = err.message;
  }
}
