// Approvals: the pending requests the signed-in person may decide.
import { api, el } from './api.js';

const $ = (id) => document.getElementById(id);
let visible = false;
let pending = null;
let again = false;

export async function show() {
  visible = true;
  await refresh();
}

// changed is called when the queue may have changed (a held call, a
// decision): the list is read again.
export function changed() {
  if (pending) { again = true; return; }
  pending = refresh().catch(() => {}).finally(() => {
    pending = null;
    if (again) { again = false; changed(); }
  });
}

async function decide(id, approve, note, card) {
  for (const b of card.querySelectorAll('button')) b.disabled = true;
  try {
    await api(`approvals/${encodeURIComponent(id)}/${approve ? 'approve' : 'refuse'}`, { method: 'POST', body: { note } });
    card.replaceChildren(el('p', { role: 'status' }, `${approve ? 'Approved' : 'Refused'}.`));
  } catch (e) {
    card.append(el('p', { role: 'alert' }, e.message));
  }
  await refresh();
}

async function refresh() {
  const { approvals, next } = await api('approvals');
  $('approvals-count').textContent = approvals.length ? String(approvals.length) + (next ? '+' : '') : '';
  $('approvals-more').hidden = !next;
  if (!visible && document.body.dataset.view !== 'approvals') return;
  $('approvals-empty').hidden = approvals.length > 0;
  $('approvals-list').replaceChildren(...approvals.map((r) => {
    // Every string is shown as the server escaped it (hidden and bidi
    // characters as \u escapes), with a mark where escaping changed it.
    const s = r.shown;
    const esc = new Set(s.escaped);
    const mark = (name) => (esc.has(name) ? el('span', { class: 'escaped', title: 'hidden or reordering characters shown as escapes' }, ' (escaped)') : '');
    const noteId = 'note-' + r.id;
    const card = el('li', { 'data-approval': r.id, 'aria-labelledby': 'h-' + r.id });
    const note = el('input', { id: noteId, maxlength: '1024' });
    card.append(
      el('h3', { id: 'h-' + r.id }, `${s.tool} — requested by ${s.subject}`, mark('tool'), mark('subject')),
      el('dl', {},
        el('dt', {}, 'Reason'), el('dd', {}, s.reason, mark('reason')),
        el('dt', {}, 'Arguments'), el('dd', {}, el('pre', { class: 'arguments' }, r.arguments_text), mark('arguments')),
        el('dt', {}, 'Approvers'), el('dd', {}, s.approvers.join(', '), mark('approvers')),
        el('dt', {}, 'Requested'), el('dd', {}, r.created),
        el('dt', {}, 'Expires'), el('dd', {}, r.expires),
        el('dt', {}, 'Id'), el('dd', {}, el('code', {}, s.id), mark('id'))),
      el('div', { class: 'row' },
        el('label', { for: noteId }, 'Note'), note,
        el('button', { type: 'button', 'aria-label': `Approve ${s.tool} for ${s.subject}`, onclick: () => decide(r.id, true, note.value, card) }, 'Approve'),
        el('button', { type: 'button', 'aria-label': `Refuse ${s.tool} for ${s.subject}`, onclick: () => decide(r.id, false, note.value, card) }, 'Refuse')));
    return card;
  }));
}
