// relay.mjs: the official TypeScript MCP SDK client calls a tool of an
// upstream through toolgate (docs/relay.md) and prints, as one JSON line,
// what it received during the call: progress, log messages, the sampling
// and elicitation requests it answered, and the result.
//
//   node relay.mjs URL TOKEN TOOL LABEL
//
// cmd/toolgate's TestE2ERelay runs it against `toolgate serve` in front of
// the upstreamtest server (its interact tool).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [url, token, tool, label] = process.argv.slice(2);
const got = { progress: [], logs: [], sampled: [], elicited: [] };

const client = new Client({ name: 'relay-ts', version: '1' }, { capabilities: { sampling: {}, elicitation: {} } });
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  const prompt = req.params.messages[0].content.text;
  got.sampled.push(prompt);
  return { role: 'assistant', model: 'ts', content: { type: 'text', text: `ts:${prompt}` } };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  got.elicited.push(req.params.message);
  return { action: 'accept', content: { answer: `ts:${req.params.message}` } };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  got.logs.push(`${n.params.level} ${n.params.data}`);
});

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
await client.setLoggingLevel('info');
const res = await client.callTool({ name: tool, arguments: { label } }, undefined, {
  onprogress: (p) => got.progress.push(`${p.progress}/${p.total} ${p.message}`),
});
got.result = res.content.map((c) => c.text).join('');
console.log(JSON.stringify(got));
await client.close();
