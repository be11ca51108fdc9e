// Node 20 shim for @modelcontextprotocol/conformance, which imports
// fs.globSync (added in Node 22). Loaded with `node --import ./node20-shim.mjs`
// (scripts/conformance does): it resolves the suite's own imports of "fs" to
// fs-globsync.mjs, which is node:fs plus a small globSync. On Node 22 and
// later it does nothing.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./node20-hooks.mjs', import.meta.url);
}
