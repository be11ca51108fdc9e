// slow-start.mjs runs a Node MCP server as `npx` starts one: seconds pass
// (npx resolves the package) before the server reads its stdin.
//
//   node slow-start.mjs GATE MS SCRIPT [ARG...]
//
// It waits until the file GATE exists (drive.mjs creates it when its client
// first contacts the server, directly or through toolgate), then MS
// milliseconds more, then runs SCRIPT with ARGs as its arguments; so the
// server comes up MS after the client's first contact however loaded the
// machine is. What the client wrote meanwhile waits in the pipe, as it
// does for npx.
import { existsSync, watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [gate, ms, script, ...args] = process.argv.slice(2);
if (!existsSync(gate)) {
  await new Promise((done) => {
    const w = watch(dirname(gate), (_, name) => {
      if (name === basename(gate) && existsSync(gate)) {
        w.close();
        done();
      }
    });
    if (existsSync(gate)) {
      w.close();
      done();
    }
  });
}
await new Promise((r) => setTimeout(r, Number(ms)));
process.argv = [process.argv[0], resolve(script), ...args];
await import(pathToFileURL(resolve(script)).href);
