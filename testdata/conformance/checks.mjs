// checks.mjs compares, check by check, the conformance suite's results of
// a run through toolgate with those of the direct run (scripts/conformance):
//
//   node checks.mjs DIRECT-RESULTS THROUGH-RESULTS KNOWN-GAPS RUN
//
// A check is SCENARIO/ID, or SCENARIO/ID~N for the Nth check of an id
// repeated in a scenario (the suite's results directory holds one
// SCENARIO-TIMESTAMP directory a scenario, each with its checks.json). Every
// check that passes directly must pass through toolgate, unless KNOWN-GAPS
// lists it for RUN ("http" or "stdio"); a listed check that now passes is a
// failure too, so the list only shrinks. KNOWN-GAPS has one gap a line:
//
//   RUN SCENARIO/ID  one-line reason
//
// ('#' starts a comment). A reason starting "(timing)" marks a check that
// passes or not with the machine's load: it does not fail when it passes.
// It prints the passed counts, every regression and
// stale entry, and exits 1 on any.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [directDir, throughDir, gapsFile, run] = process.argv.slice(2);

function results(dir) {
  const out = new Map();
  for (const d of readdirSync(dir)) {
    const file = join(dir, d, 'checks.json');
    if (!existsSync(file)) continue;
    const scenario = d.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
    const seen = new Map();
    for (const c of JSON.parse(readFileSync(file, 'utf8'))) {
      let key = `${scenario}/${c.id}`;
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      if (n > 1) key += `~${n}`;
      out.set(key, c.status);
    }
  }
  return out;
}

const gaps = new Map();
for (const line of readFileSync(gapsFile, 'utf8').split('\n')) {
  const l = line.replace(/#.*/, '').trim();
  if (!l) continue;
  const [r, check, ...reason] = l.split(/\s+/);
  if (r === run) gaps.set(check, reason.join(' '));
}

const direct = results(directDir);
const through = results(throughDir);
const passes = (m) => [...m.values()].filter((s) => s === 'SUCCESS').length;
let bad = 0;
const known = [];
for (const [check, status] of direct) {
  if (status !== 'SUCCESS') continue;
  const ok = through.get(check) === 'SUCCESS';
  if (!ok && gaps.has(check)) {
    known.push(check);
  } else if (!ok) {
    bad++;
    console.log(`REGRESSION ${run} ${check}: ${through.get(check) ?? 'not run'} through toolgate, SUCCESS directly`);
  } else if (gaps.has(check) && !gaps.get(check).startsWith('(timing)')) {
    bad++;
    console.log(`STALE ${run} ${check}: passes through toolgate now; remove it from ${gapsFile}`);
  }
}
for (const check of gaps.keys()) {
  if (direct.get(check) !== 'SUCCESS') {
    bad++;
    console.log(`STALE ${run} ${check}: listed, but it does not pass directly (${direct.get(check) ?? 'not run'})`);
  }
}
console.log(`${run}: ${passes(through)} checks passed through toolgate, ${passes(direct)} directly; ${known.length} known gaps, ${bad} unexpected`);
process.exit(bad ? 1 : 0);
