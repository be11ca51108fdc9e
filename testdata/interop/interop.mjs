// interop.mjs drives `toolgate serve` with the official TypeScript MCP SDK
// client (@modelcontextprotocol/sdk, pinned in package-lock.json), over stdio
// and over streamable HTTP, and checks the answers SPEC §5 and §6 name:
// a listing, a granted call, a hidden call, a call held for approval (and,
// over HTTP, approved by another admin) and a named-argument error, each
// with its exact text.
//
//   node interop.mjs /path/to/toolgate [--issuer URL --jwt-port N] [--catalog-upstream PATH]
//
// With --catalog-upstream (the go-sdk's conformance server, built from the
// module cache) it also serves that server's prompts and resources as an
// importing stdio upstream (SPEC §16): the client gets a prompt and reads a
// resource, and a caller without the upstream's section gets for them what
// a name nothing has gets.
//
// With --issuer (testdata/oidc/provider.mjs, issuing tokens for
// http://127.0.0.1:N/mcp) it also serves HTTP at 127.0.0.1:N with that
// issuer (SPEC §12), gets access tokens with the client_credentials grant
// and checks that the client, given such a token, lists and calls as the
// caller the token's claims say, and that no token gets 401 pointing at the
// Protected Resource Metadata.
//
// It starts every toolgate process itself (loopback only, memory ledger, no
// file watching), kills them when done, prints one line per check and a
// summary `interop: N passed, M failed`, and exits 1 on any mismatch.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const bin = process.argv[2];
if (!bin) {
  console.error('usage: node interop.mjs /path/to/toolgate [--issuer URL --jwt-port N]');
  process.exit(2);
}
const argOf = (name) => (process.argv.indexOf(name) > 2 ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const ISSUER = argOf('--issuer');
// The go-sdk's conformance server (prompts, resources, templates), run by
// toolgate as an importing stdio upstream for the catalog checks (SPEC §16).
const CATALOG_UPSTREAM = argOf('--catalog-upstream');
const JWT_PORT = argOf('--jwt-port');

// The tools of the bundled example (example/registry.yaml), in registry order.
const EXAMPLE_TOOLS = ['echo', 'add', 'getReward', 'price', 'fail', 'inner', 'count', 'sleep', 'execUrl', 'resetCounter'];
// The demo token of the bundled example, and one more for a manager.
const ADMIN_TOKEN = 'toolgate-demo-admin';
const MANAGER_TOKEN = 'interop-manager-token';
// A second admin, who approves the demo admin's held calls over HTTP.
const APPROVER_TOKEN = 'interop-approver-token';
// Every step is bounded: a hang is a failure, not a stuck CI job.
const STEP_MS = 15000;

let passed = 0;
let failed = 0;
const cleanups = [];

function report(ok, name, detail) {
  if (ok) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}: ${detail}`);
  }
}

function bounded(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${STEP_MS} ms`)), STEP_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// check runs one step; a thrown error is a failed check, not a crash.
async function check(name, fn) {
  try {
    const detail = await bounded(fn(), name);
    report(detail === undefined, name, detail);
  } catch (err) {
    report(false, name, err?.stack ?? String(err));
  }
}

// textOf returns the one text content item of a CallToolResult.
function textOf(res) {
  if (!Array.isArray(res?.content) || res.content.length !== 1 || res.content[0].type !== 'text') {
    return undefined;
  }
  return res.content[0].text;
}

// expectResult returns undefined when res is exactly the text and isError
// wanted, and else what differs.
function expectResult(res, text, isError) {
  const got = textOf(res);
  if (got !== text || Boolean(res.isError) !== isError) {
    return `want ${JSON.stringify({ text, isError })}, got ${JSON.stringify(res)}`;
  }
  return undefined;
}

// HELD is the bundled example's answer to a resetCounter call that waits
// for an approval (SPEC §13); its group is the approval id.
const HELD = /^Approval required: Tool 'resetCounter' is destructive and needs an admin's approval \(approval ([0-9a-f]{24})\)\. Call again once it is approved\.$/;

// expectHeld returns undefined when res is a held answer, and else what
// differs.
function expectHeld(res) {
  const got = textOf(res);
  if (!HELD.test(got ?? '') || res.isError !== true) {
    return `want a held answer, got ${JSON.stringify(res)}`;
  }
  return undefined;
}

function expectNames(tools, want) {
  const got = tools.map((t) => t.name);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    return `want tools ${JSON.stringify(want)}, got ${JSON.stringify(got)}`;
  }
  return undefined;
}

async function connect(transport, label) {
  const client = new Client({ name: 'toolgate-interop', version: '1.0.0' });
  await bounded(client.connect(transport), `${label}: connect`);
  cleanups.push(() => client.close().catch(() => {}));
  return client;
}

// The checks every transport runs: admin is the bundled example's admin,
// manager holds the role manager (execUrl's section, reports, is admins' only).
async function runChecks(label, admin, manager) {
  await check(`${label}: tools/list as admin shows the 10 tools of the example`, async () => {
    const { tools } = await admin.listTools();
    return expectNames(tools, EXAMPLE_TOOLS);
  });
  await check(`${label}: tools/list as manager hides execUrl and resetCounter`, async () => {
    const { tools } = await manager.listTools();
    return expectNames(tools, EXAMPLE_TOOLS.filter((n) => n !== 'execUrl' && n !== 'resetCounter'));
  });
  await check(`${label}: a granted call (add 2+3)`, async () => {
    const res = await admin.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    return expectResult(res, '5', false);
  });
  await check(`${label}: a hidden call (execUrl as manager) answers like a tool that does not exist`, async () => {
    const hidden = await manager.callTool({ name: 'execUrl', arguments: { url: 'https://example.com/' } });
    const missing = await manager.callTool({ name: 'noSuchTool', arguments: { url: 'https://example.com/' } });
    return expectResult(hidden, "Error: Unknown tool 'execUrl'.", true) ??
      expectResult(missing, "Error: Unknown tool 'noSuchTool'.", true);
  });
  await check(`${label}: a destructive call is held for an admin's approval (resetCounter)`, async () => {
    const res = await admin.callTool({ name: 'resetCounter', arguments: { key: 'interop' } });
    return expectHeld(res);
  });
  await check(`${label}: a client-written _meta festi/approvedBy approves nothing`, async () => {
    const res = await admin.callTool({ name: 'resetCounter', arguments: { key: 'interop' }, _meta: { 'festi/approvedBy': 'ann' } });
    return expectHeld(res);
  });
  await check(`${label}: a named-argument error (getReward without idReward)`, async () => {
    const res = await admin.callTool({ name: 'getReward', arguments: {} });
    return expectResult(res, "Error: Missing required argument 'idReward'.", true);
  });
}

// approvalChecks: another admin approves a held call over HTTP with her
// own token; the identical call then runs once (SPEC §13).
async function approvalChecks(url, admin) {
  const base = url.replace(/\/mcp$/, '');
  const args = { name: 'resetCounter', arguments: { key: 'interop-approved' } };
  let id;
  await check('http: held, approved by another admin, runs once', async () => {
    const held = await admin.callTool(args);
    const bad = expectHeld(held);
    if (bad) return bad;
    id = HELD.exec(textOf(held))[1];
    const self = await fetch(`${base}/approvals/${id}/approve`, { method: 'POST', headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    if (self.status !== 403) return `the requester approving her own call: want 403, got ${self.status}`;
    const resp = await fetch(`${base}/approvals/${id}/approve`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${APPROVER_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ note: 'interop' }),
    });
    if (resp.status !== 200) return `approve: want 200, got ${resp.status} ${await resp.text()}`;
    const ran = await admin.callTool(args);
    const notRun = expectResult(ran, '1', false);
    if (notRun) return notRun;
    return expectHeld(await admin.callTool(args));
  });
}

function stdioTransport(...caller) {
  const transport = new StdioClientTransport({
    command: bin,
    args: ['serve', '--stdio', ...caller, '--ledger', 'memory', '--no-watch', '--audit', join(dir, 'audit-stdio.jsonl')],
    stderr: 'pipe',
  });
  collect(transport.stderr, `toolgate serve --stdio ${caller.join(' ')}`);
  return transport;
}

// logs keeps what the toolgate processes wrote to stderr, shown on failure.
const logs = [];
function collect(stream, name) {
  let text = '';
  stream?.on('data', (b) => { text += b; });
  logs.push(() => `--- stderr of ${name}:\n${text}`);
}

const sha256 = (s) => createHash('sha256').update(s).digest('hex');

// startHTTP starts `toolgate serve --http ADDR` with a tokens file (and
// extra flags) and resolves to the MCP URL it prints.
async function startHTTP(addr = '127.0.0.1:0', ...extra) {
  const tokens = join(dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({
    [sha256(ADMIN_TOKEN)]: { subject: 'demo', roles: ['admin'] },
    [sha256(MANAGER_TOKEN)]: { subject: 'max', roles: ['manager'] },
    [sha256(APPROVER_TOKEN)]: { subject: 'bea', roles: ['admin'] },
  }));
  const child = spawn(bin, ['serve', '--http', addr, '--tokens', tokens, '--ledger', 'memory', '--no-watch', '--audit', join(dir, `audit-http-${cleanups.length}.jsonl`), ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => { child.kill('SIGKILL'); resolve(); }, 5000);
    child.once('exit', () => { clearTimeout(timer); resolve(); });
    child.kill('SIGTERM');
  }));
  collect(child.stderr, `toolgate serve --http ${addr} ${extra.join(' ')}`);
  // With --issuer, the signing keys are fetched in the background (JWT
  // callers get 503 until then): wait for the line that says they are in.
  const keys = !extra.includes('--issuer') ? Promise.resolve() : new Promise((resolve, reject) => {
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (line.includes('signing keys loaded')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`toolgate serve --http exited with ${code} before loading the signing keys`)));
  });
  const url = new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const m = /serving MCP \(streamable HTTP\) at (http:\/\/\S+\/mcp)/.exec(line);
      if (m) resolve(m[1]);
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`toolgate serve --http exited with ${code} before serving`)));
  });
  const served = await bounded(url, 'toolgate serve --http: the MCP URL');
  await bounded(keys, 'toolgate serve --http: the signing keys');
  return served;
}

function httpTransport(url, token) {
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

// accessToken gets an access token for resource from the issuer, as the
// provider's client (alice: roles [manager, reader]; bob: roles "reader").
async function accessToken(client, resource) {
  const res = await fetch(`${ISSUER}/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: `Basic ${Buffer.from(`${client}-app:${client}-secret`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'tools:read tools:call' }),
  });
  const body = await res.json();
  if (!res.ok || !body.access_token) throw new Error(`token endpoint: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

// runJWTChecks: the client given access tokens of the issuer.
async function runJWTChecks() {
  const url = await startHTTP(`127.0.0.1:${JWT_PORT}`, '--issuer', ISSUER);
  const resource = `http://127.0.0.1:${JWT_PORT}/mcp`;
  const alice = await connect(httpTransport(url, await accessToken('alice', resource)), 'jwt alice');
  const bob = await connect(httpTransport(url, await accessToken('bob', resource)), 'jwt bob');
  await check('jwt: tools/list as alice (roles manager, reader from the token) hides execUrl and resetCounter', async () => {
    const { tools } = await alice.listTools();
    return expectNames(tools, EXAMPLE_TOOLS.filter((n) => n !== 'execUrl' && n !== 'resetCounter'));
  });
  await check('jwt: tools/list as bob (role reader) shows the tools without a section', async () => {
    const { tools } = await bob.listTools();
    return expectNames(tools, ['echo', 'add', 'fail', 'inner', 'count', 'sleep']);
  });
  await check('jwt: a granted call as alice (add 2+3)', async () => {
    const res = await alice.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    return expectResult(res, '5', false);
  });
  await check('jwt: a call bob is not granted (getReward) answers like a tool that does not exist', async () => {
    const res = await bob.callTool({ name: 'getReward', arguments: { idReward: 7 } });
    return expectResult(res, "Error: Unknown tool 'getReward'.", true);
  });
  await check('jwt: no token gets 401 with resource_metadata naming the issuer', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    const challenge = res.headers.get('www-authenticate') ?? '';
    const m = /resource_metadata="([^"]+)"/.exec(challenge);
    if (res.status !== 401 || !m) return `want 401 with resource_metadata, got ${res.status} ${challenge}`;
    const meta = await (await fetch(m[1])).json();
    if (JSON.stringify(meta.authorization_servers) !== JSON.stringify([ISSUER]) || meta.resource !== resource) {
      return `metadata: ${JSON.stringify(meta)}`;
    }
    return undefined;
  });
  await check('jwt: a token the issuer did not sign gets 401 invalid_token', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: 'Bearer e30.e30.' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    const challenge = res.headers.get('www-authenticate') ?? '';
    return res.status === 401 && challenge.startsWith('Bearer error="invalid_token"') ? undefined : `got ${res.status} ${challenge}`;
  });
}

// catalogChecks: prompts and resources of an importing upstream through
// toolgate (SPEC §16), as the TypeScript client sees them: admin may see
// the upstream's section; a viewer holds no role for it (closed by default)
// and gets, for what admin can get and read, what a name nothing has gets.
async function catalogChecks() {
  const registry = join(dir, 'catalog-registry.yaml');
  writeFileSync(registry, 'sections:\n  "upstream:ev": { roles: [admin] }\ntools: []\n');
  const policy = join(dir, 'catalog-rego');
  mkdirSync(policy);
  writeFileSync(join(policy, 'grant.rego'), 'package toolgate.grant\n');
  const config = join(dir, 'catalog.yaml');
  writeFileSync(config, `registry: ${registry}\npolicy: ${policy}\nupstreams:\n  - { name: ev, command: ${JSON.stringify(CATALOG_UPSTREAM)}, import: true }\n`);
  const transport = (...caller) => {
    const t = new StdioClientTransport({
      command: bin,
      args: ['serve', '--stdio', '--config', config, ...caller, '--ledger', 'memory', '--no-watch', '--audit', join(dir, 'audit-catalog.jsonl')],
      stderr: 'pipe',
    });
    collect(t.stderr, `toolgate serve --stdio --config ${config} ${caller.join(' ')}`);
    return t;
  };
  const admin = await connect(transport('--as', 'ann', '--role', 'admin'), 'catalog admin');
  const viewer = await connect(transport('--as', 'vic', '--role', 'viewer'), 'catalog viewer');
  await check('catalog: initialize announces prompts and resources', async () => {
    const caps = admin.getServerCapabilities();
    return caps?.prompts && caps?.resources?.subscribe ? undefined : `got ${JSON.stringify(caps)}`;
  });
  await check('catalog: prompts/list as admin names the imported prompts NAME.PROMPT', async () => {
    const { prompts } = await admin.listPrompts();
    return prompts.some((p) => p.name === 'ev.test_simple_prompt') ? undefined : `got ${JSON.stringify(prompts.map((p) => p.name))}`;
  });
  await check('catalog: prompts/get as admin', async () => {
    const res = await admin.getPrompt({ name: 'ev.test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
    const text = res.messages?.[0]?.content?.text;
    return text === "Prompt with arguments: arg1='a', arg2='b'" ? undefined : `got ${JSON.stringify(res)}`;
  });
  await check('catalog: resources/read as admin', async () => {
    const res = await admin.readResource({ uri: 'test://static-text' });
    const text = res.contents?.[0]?.text;
    return text === 'This is the content of the static text resource.' ? undefined : `got ${JSON.stringify(res)}`;
  });
  await check('catalog: a viewer lists no prompt and no resource', async () => {
    const { prompts } = await viewer.listPrompts();
    const { resources } = await viewer.listResources();
    return prompts.length === 0 && resources.length === 0 ? undefined : `got ${JSON.stringify({ prompts, resources })}`;
  });
  const errorOf = async (p) => {
    try {
      await p;
      return 'no error';
    } catch (err) {
      return `${err.code} ${err.message}`;
    }
  };
  await check('catalog: prompts/get of a hidden prompt answers as one that does not exist', async () => {
    const hidden = await errorOf(viewer.getPrompt({ name: 'ev.test_simple_prompt' }));
    const absent = await errorOf(viewer.getPrompt({ name: 'ev.test_simple_prompX' }));
    return hidden === absent.replaceAll('prompX', 'prompt') && hidden !== 'no error' ? undefined : `hidden ${hidden}, absent ${absent}`;
  });
  await check('catalog: resources/read of a hidden resource answers as a URI nothing serves', async () => {
    const hidden = await errorOf(viewer.readResource({ uri: 'test://static-text' }));
    const absent = await errorOf(viewer.readResource({ uri: 'test://static-texX' }));
    return hidden === absent.replaceAll('texX', 'text') && hidden !== 'no error' ? undefined : `hidden ${hidden}, absent ${absent}`;
  });
}

const dir = mkdtempSync(join(tmpdir(), 'toolgate-interop-'));
let exitCode = 0;
try {
  // stdio: the caller comes from the flags, one process per caller.
  try {
    const admin = await connect(stdioTransport('--as', 'ann', '--role', 'admin'), 'stdio admin');
    const manager = await connect(stdioTransport('--as', 'max', '--role', 'manager'), 'stdio manager');
    await runChecks('stdio', admin, manager);
  } catch (err) {
    report(false, 'stdio: connect', err?.stack ?? String(err));
  }

  // streamable HTTP: the caller comes from each request's bearer token.
  try {
    const url = await startHTTP();
    const adminTransport = httpTransport(url, ADMIN_TOKEN);
    const admin = await connect(adminTransport, 'http admin');
    const manager = await connect(httpTransport(url, MANAGER_TOKEN), 'http manager');
    console.log(`http: ${url}, protocol revision ${adminTransport.protocolVersion}`);
    await runChecks('http', admin, manager);
    await approvalChecks(url, admin);
  } catch (err) {
    report(false, 'http: connect', err?.stack ?? String(err));
  }

  // prompts and resources of an importing upstream (SPEC §16).
  if (CATALOG_UPSTREAM) {
    try {
      await catalogChecks();
    } catch (err) {
      report(false, 'catalog: connect', err?.stack ?? String(err));
    }
  }

  // streamable HTTP with access tokens of an OAuth 2.1 issuer.
  if (ISSUER) {
    try {
      await runJWTChecks();
    } catch (err) {
      report(false, 'jwt: connect', err?.stack ?? String(err));
    }
  }
} finally {
  for (const c of cleanups.reverse()) {
    await c();
  }
  rmSync(dir, { recursive: true, force: true });
  if (failed > 0) {
    for (const l of logs) console.log(l());
    exitCode = 1;
  }
  console.log(`interop: ${passed} passed, ${failed} failed`);
}
process.exit(exitCode);
