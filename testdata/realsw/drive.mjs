// drive.mjs drives one MCP server with one client, as cmd/toolgate's
// TestRealSoftware runs it for each pair (directly and through toolgate),
// and prints what the client saw as one JSON object on stdout:
//
//   node drive.mjs PLAN.json
//
// PLAN is {"client": "sdk" | "inspector", "target": TARGET, "calls": [CALL],
// "concurrent": CALL, "count": N, "root": DIR, "gate": FILE}, where TARGET is
// {"command", "args", "env"} (stdio) or {"url", "headers"} (streamable
// HTTP) and CALL is {"name", "arguments"}.
//
// client "sdk" (@modelcontextprotocol/sdk, the TypeScript SDK client): one
// connection; first N calls of `concurrent` at once (the caller's first
// contact), then each of `calls` in order, then the tool, prompt, resource
// and template listings (every page).
// client "inspector" (the MCP Inspector CLI, one-shot mode): the four
// listings, each one CLI run, at once, and N calls of `concurrent` at once
// from one CLI run (--load).
//
// The output: {"tools", "prompts", "resources", "templates": the listed
// items, or {"error"} when the listing failed; "calls": each call's result
// or {"error": {code, message}}; "concurrent": {"answered", "failures",
// and "answers" (each distinct answer and its count) or "toolErrors"}}.
// A listing the server answers with "method not found" is an empty one (a
// client shows nothing either way). DIR, when given, is written "$ROOT" in
// the output, so that runs over two copies of the same files compare;
// "replace" (see rooted) rewrites what differs from run to run. FILE is
// created at first contact (slow-start.mjs waits for it).
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const count = plan.count ?? 20;
const STEP_MS = 150000;

function bounded(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${STEP_MS} ms`)), STEP_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function errorValue(err) {
  if (err && typeof err.code === 'number') return { error: { code: err.code, message: err.message } };
  return { error: { message: String(err?.message ?? err) } };
}

const LISTINGS = [
  ['tools', 'tools/list', 'tools'],
  ['prompts', 'prompts/list', 'prompts'],
  ['resources', 'resources/list', 'resources'],
  ['templates', 'resources/templates/list', 'resourceTemplates'],
];

function listingValue(err) {
  // "Method not found": the server serves none of these.
  if (err && err.code === -32601) return [];
  return errorValue(err);
}

async function driveSDK() {
  const t = plan.target;
  const transport = t.url
    ? new StreamableHTTPClientTransport(new URL(t.url), { requestInit: { headers: t.headers ?? {} } })
    : new StdioClientTransport({ command: t.command, args: t.args ?? [], env: { ...process.env, ...(t.env ?? {}) }, stderr: 'ignore' });
  const client = new Client({ name: 'toolgate-realsw', version: '0.0.0' });
  await bounded(client.connect(transport), 'connect');
  const out = {};
  // First contact: N calls at once.
  const answers = await Promise.allSettled(
    Array.from({ length: count }, () => bounded(client.callTool({ name: plan.concurrent.name, arguments: plan.concurrent.arguments }), 'concurrent call')),
  );
  // Each distinct answer (as JSON) and how many calls got it.
  const got = {};
  for (const a of answers) {
    if (a.status === 'fulfilled') {
      const k = JSON.stringify(rooted(a.value));
      got[k] = (got[k] ?? 0) + 1;
    }
  }
  out.concurrent = {
    answered: answers.filter((a) => a.status === 'fulfilled').length,
    answers: got,
    failures: answers.filter((a) => a.status === 'rejected').map((a) => String(a.reason?.message ?? a.reason)),
  };
  out.calls = [];
  for (const c of plan.calls ?? []) {
    try {
      out.calls.push({ name: c.name, result: await bounded(client.callTool({ name: c.name, arguments: c.arguments }), `call ${c.name}`) });
    } catch (err) {
      out.calls.push({ name: c.name, ...errorValue(err) });
    }
  }
  const list = {
    tools: (p) => client.listTools(p),
    prompts: (p) => client.listPrompts(p),
    resources: (p) => client.listResources(p),
    templates: (p) => client.listResourceTemplates(p),
  };
  for (const [key, method, field] of LISTINGS) {
    const items = [];
    try {
      let cursor;
      do {
        const page = await bounded(list[key](cursor ? { cursor } : {}), method);
        items.push(...(page[field] ?? []));
        cursor = page.nextCursor;
      } while (cursor);
      out[key] = items;
    } catch (err) {
      out[key] = listingValue(err);
    }
  }
  await client.close();
  return out;
}

const require = createRequire(import.meta.url);
const inspectorCLI = require.resolve('@modelcontextprotocol/inspector/package.json').replace(/package\.json$/, 'clients/cli/build/index.js');

// inspector runs the Inspector CLI once with args and returns its JSON output.
function inspector(args) {
  const t = plan.target;
  // A command goes last, after "--": its own flags are not the CLI's.
  const target = t.url
    ? ['--transport', 'http', '--server-url', t.url, ...Object.entries(t.headers ?? {}).flatMap(([k, v]) => ['--header', `${k}: ${v}`])]
    : [...Object.entries(t.env ?? {}).flatMap(([k, v]) => ['-e', `${k}=${v}`]), '--', t.command, ...(t.args ?? [])];
  // The CLI's own connect bound (15 s) is a failure bound here too.
  const argv = [inspectorCLI, '--cli', '--format', 'json', '-q', '--connect-timeout', String(STEP_MS), ...args, ...target];
  return bounded(new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve({ code, value: JSON.parse(stdout || stderr) });
      } catch {
        reject(new Error(`inspector ${args.join(' ')}: exit ${code}: ${(stdout + stderr).slice(0, 2000)}`));
      }
    });
  }), `inspector ${args.join(' ')}`);
}

async function driveInspector() {
  const out = {};
  const c = plan.concurrent;
  const runs = [
    ...LISTINGS.map(async ([key, method, field]) => {
      const { value } = await inspector(['--method', method]);
      if (value.result) {
        out[key] = value.result[field] ?? [];
      } else {
        const e = value.error ?? value;
        out[key] = listingValue({ code: e.code ?? e.data?.code, message: e.message ?? JSON.stringify(e) });
      }
    }),
    (async () => {
      const { value } = await inspector(['--method', 'tools/call', '--tool-name', c.name, '--tool-args-json', JSON.stringify(c.arguments ?? {}),
        '--load', '--load-concurrency', String(count), '--load-requests', String(count)]);
      // --load's summary: a call is answered unless it got no result
      // (a tool's own error, isError, is an answer).
      // toolErrors counts the answers with isError.
      const r = value.result;
      out.concurrent = r
        ? { answered: r.requests - r.errors, toolErrors: r.toolErrors, failures: r.errorMessages ?? [] }
        : { answered: 0, failures: [JSON.stringify(value.error ?? value)] };
    })(),
  ];
  await Promise.all(runs);
  return out;
}

// rooted writes DIR as "$ROOT", and applies the plan's "replace": pairs of
// a regular expression and its replacement (times a tool reports, say),
// to every string of the output.
function rooted(value) {
  const res = (plan.replace ?? []).map(([re, to]) => [new RegExp(re, 'g'), to]);
  return JSON.parse(JSON.stringify(value), (_, v) => {
    if (typeof v !== 'string') return v;
    if (plan.root) v = v.split(plan.root).join('$ROOT');
    for (const [re, to] of res) v = v.replace(re, to);
    return v;
  });
}

try {
  // The client's first contact: a server started by slow-start.mjs starts
  // its clock now.
  if (plan.gate) writeFileSync(plan.gate, '');
  const out = plan.client === 'inspector' ? await driveInspector() : await driveSDK();
  process.stdout.write(JSON.stringify(rooted(out)) + '\n');
  process.exit(0);
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
