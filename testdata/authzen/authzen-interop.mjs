// An AuthZEN Authorization API 1.0 client written from the specification
// alone (https://openid.net/specs/authorization-api-1_0-final.html): plain
// fetch, no SDK, no toolgate code. It sends the specification's own example
// requests and MCP-shaped ones to a PDP and checks the answers' shapes, the
// evaluations semantics and the PDP's authentication.
//
//   node authzen-interop.mjs BASE_URL PDP_TOKEN NOT_PDP_TOKEN
//
// PDP_TOKEN is a bearer token the PDP answers; NOT_PDP_TOKEN one it knows
// but does not answer (403). The MCP-shaped requests assume toolgate's
// bundled example: an admin may call echo, a subject without roles may not
// call getReward. Exit status 0 when every check holds.

const [base, pdpToken, notPdpToken] = process.argv.slice(2);
if (!base || !pdpToken || !notPdpToken) {
  console.error('usage: node authzen-interop.mjs BASE_URL PDP_TOKEN NOT_PDP_TOKEN');
  process.exit(2);
}

let failures = 0;
let checks = 0;
function check(ok, what, detail) {
  checks++;
  if (!ok) {
    failures++;
    console.error(`FAIL ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  }
}

async function post(url, body, token, requestId) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (requestId) headers['X-Request-ID'] = requestId;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, type: res.headers.get('content-type') || '', requestId: res.headers.get('x-request-id'), text, json };
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// A Decision (the Decision section): a boolean decision, and an optional context object.
function isDecision(d) {
  return isObject(d) && typeof d.decision === 'boolean' && (d.context === undefined || isObject(d.context));
}

// --- Policy Decision Point metadata -------------------------------------------------------
const metaRes = await fetch(`${base}/.well-known/authzen-configuration`);
check(metaRes.status === 200, 'metadata: 200', metaRes.status);
check((metaRes.headers.get('content-type') || '').startsWith('application/json'), 'metadata: application/json');
const meta = await metaRes.json();
check(meta.policy_decision_point === base, 'metadata: policy_decision_point is the identifier asked', meta);
check(typeof meta.access_evaluation_endpoint === 'string', 'metadata: access_evaluation_endpoint', meta);
// HTTPS JSON binding: the endpoints the metadata names are the ones to use.
const evaluation = meta.access_evaluation_endpoint || `${base}/access/v1/evaluation`;
const evaluations = meta.access_evaluations_endpoint || `${base}/access/v1/evaluations`;
check(evaluation === `${base}/access/v1/evaluation`, 'metadata: the default evaluation path', evaluation);
check(evaluations === `${base}/access/v1/evaluations`, 'metadata: the default evaluations path', evaluations);

// --- The specification's example requests ------------------------------------
// Access Evaluation API: the Example Request.
const single = {
  subject: { type: 'user', id: 'alice@example.com' },
  resource: { type: 'account', id: '123' },
  action: { name: 'can_read', properties: { method: 'GET' } },
  context: { time: '1985-10-26T01:22-07:00' },
};
// Access Evaluations API: three requests, no default values.
const noDefaults = {
  evaluations: ['boxcarring.md', 'subject-search.md', 'resource-search.md'].map((id) => ({
    subject: { type: 'user', id: 'alice@example.com' },
    action: { name: 'can_read' },
    resource: { type: 'document', id },
    context: { time: '2024-05-31T15:22-07:00' },
  })),
};
// Default values: a default subject and context.
const defaultSubject = {
  subject: { type: 'user', id: 'alice@example.com' },
  context: { time: '2024-05-31T15:22-07:00' },
  evaluations: ['boxcarring.md', 'subject-search.md', 'resource-search.md'].map((id) => ({
    action: { name: 'can_read' },
    resource: { type: 'document', id },
  })),
};
// Default values: a default action overridden by the third evaluation.
const defaultAction = {
  subject: { type: 'user', id: 'alice@example.com' },
  context: { time: '2024-05-31T15:22-07:00' },
  action: { name: 'can_read' },
  evaluations: [
    { resource: { type: 'document', id: 'boxcarring.md' } },
    { resource: { type: 'document', id: 'subject-search.md' } },
    { action: { name: 'can_edit' }, resource: { type: 'document', id: 'resource-search.md' } },
  ],
};
// Evaluations options, with an option the PDP does not know.
const withOptions = {
  evaluations: [{ resource: { type: 'doc', id: '1' }, subject: { type: 'doc', id: '2' } }],
  options: { evaluations_semantic: 'execute_all', another_option: 'value' },
};
// Evaluations semantics: read three documents under each semantic.
const threeDocuments = (semantic) => ({
  subject: { type: 'user', id: 'alice@example.com' },
  action: { name: 'read' },
  options: { evaluations_semantic: semantic },
  evaluations: ['1', '2', '3'].map((id) => ({ resource: { type: 'document', id } })),
});

{
  const r = await post(evaluation, single, pdpToken, 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716');
  check(r.status === 200, 'spec example request: 200', r);
  check(r.type.startsWith('application/json'), 'spec example request: application/json', r.type);
  check(isDecision(r.json), 'spec example request: a Decision', r.json);
  check(r.requestId === 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716', 'spec example request: X-Request-ID echoed', r.requestId);
  // can_read is no method this PDP decides: closed.
  check(r.json && r.json.decision === false, 'spec example request: false', r.json);
}

async function batch(body, what) {
  const r = await post(evaluations, body, pdpToken);
  check(r.status === 200, `${what}: 200`, r);
  check(r.type.startsWith('application/json'), `${what}: application/json`, r.type);
  const ok = isObject(r.json) && Array.isArray(r.json.evaluations) && r.json.evaluations.every(isDecision);
  check(ok, `${what}: {"evaluations": [Decision...]}`, r.json);
  return ok ? r.json.evaluations : [];
}

for (const [body, what, n] of [
  [noDefaults, 'spec evaluations without defaults', 3],
  [defaultSubject, 'spec evaluations with a default subject and context', 3],
  [defaultAction, 'spec evaluations with a default action overridden', 3],
  [withOptions, 'spec evaluations with options', 1],
  [threeDocuments('execute_all'), 'spec execute_all', 3],
]) {
  const got = await batch(body, what);
  check(got.length === n, `${what}: ${n} decisions, in order`, got);
  check(got.every((d) => d.decision === false), `${what}: every decision false (no MCP method)`, got);
}
{
  // Every decision is false, so deny_on_first_deny stops at the first and
  // permit_on_first_permit runs them all.
  const deny = await batch(threeDocuments('deny_on_first_deny'), 'spec deny_on_first_deny');
  check(deny.length === 1 && deny[0].decision === false, 'spec deny_on_first_deny: stops at the first deny', deny);
  const permit = await batch(threeDocuments('permit_on_first_permit'), 'spec permit_on_first_permit');
  check(permit.length === 3, 'spec permit_on_first_permit: no permit, every evaluation', permit);
}
{
  // An evaluations request without evaluations is an evaluation request.
  const r = await post(evaluations, single, pdpToken);
  check(r.status === 200 && isDecision(r.json), 'evaluations without evaluations: a Decision', r);
}

// --- MCP-shaped requests ---------------------------------------------------------
const admin = { type: 'user', id: 'root', properties: { roles: ['admin'] } };
const nobody = { type: 'user', id: 'nora', properties: { roles: [] } };
{
  const r = await post(evaluation, { subject: admin, action: { name: 'tools/call' }, resource: { type: 'mcp_tool', id: 'echo', properties: { arguments: { text: 'hi' } } } }, pdpToken);
  check(r.status === 200 && isDecision(r.json) && r.json.decision === true, 'an admin may call echo', r);
  const hidden = await post(evaluation, { subject: nobody, action: { name: 'tools/call' }, resource: { type: 'mcp_tool', id: 'getReward' } }, pdpToken);
  check(hidden.status === 200 && isDecision(hidden.json) && hidden.json.decision === false, 'nora may not call getReward', hidden);
  const absent = await post(evaluation, { subject: nobody, action: { name: 'tools/call' }, resource: { type: 'mcp_tool', id: 'getRewardX' } }, pdpToken);
  check(absent.text === hidden.text, 'a hidden and an absent tool answer alike', [hidden.text, absent.text]);
}
{
  // Default values and the three semantics on decisions that
  // differ: true, false, true, false.
  const mcp = (semantic) => ({
    action: { name: 'tools/call' },
    resource: { type: 'mcp_tool', id: 'echo', properties: { arguments: { text: 'hi' } } },
    ...(semantic ? { options: { evaluations_semantic: semantic } } : {}),
    evaluations: [
      { subject: admin },
      { subject: nobody, resource: { type: 'mcp_tool', id: 'getReward' } },
      { subject: admin, action: { name: 'tools/list' } },
      { subject: nobody, action: { name: 'tools/list' }, resource: { type: 'mcp_tool', id: 'getReward' } },
    ],
  });
  const all = await batch(mcp(undefined), 'MCP evaluations, default semantic');
  check(JSON.stringify(all.map((d) => d.decision)) === '[true,false,true,false]', 'MCP evaluations: true, false, true, false in order', all);
  const explicitAll = await batch(mcp('execute_all'), 'MCP execute_all');
  check(JSON.stringify(explicitAll) === JSON.stringify(all), 'MCP execute_all is the default', explicitAll);
  const deny = await batch(mcp('deny_on_first_deny'), 'MCP deny_on_first_deny');
  check(JSON.stringify(deny.map((d) => d.decision)) === '[true,false]', 'MCP deny_on_first_deny: stops at the first false', deny);
  const permit = await batch(mcp('permit_on_first_permit'), 'MCP permit_on_first_permit');
  check(JSON.stringify(permit.map((d) => d.decision)) === '[true]', 'MCP permit_on_first_permit: stops at the first true', permit);
}
{
  // A required member missing is a Bad Request with an error message string.
  const r = await post(evaluation, { subject: admin, resource: { type: 'mcp_tool', id: 'echo' } }, pdpToken);
  check(r.status === 400 && r.text.length > 0, 'no action: 400 with a message', r);
}

// --- Error responses: 401 and 403 ----------------------------------------------------
for (const url of [evaluation, evaluations]) {
  const none = await post(url, single, undefined);
  check(none.status === 401, `${url}: 401 without a token`, none.status);
  const unknown = await post(url, single, 'not-a-token-the-pdp-knows');
  check(unknown.status === 401, `${url}: 401 with an unknown token`, unknown.status);
  const notPdp = await post(url, single, notPdpToken);
  check(notPdp.status === 403, `${url}: 403 for a caller without the PDP role`, notPdp.status);
}

console.log(`${checks - failures}/${checks} checks hold`);
process.exit(failures === 0 ? 0 : 1);
