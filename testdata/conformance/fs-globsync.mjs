// node:fs with a minimal globSync (Node 22's), for the conformance suite on
// Node 20: patterns of path segments with `*`, `?` and `**`, matched
// against the files under options.cwd; it returns their relative paths.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

function segmentRegExp(seg) {
  const re = seg.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]');
  return new RegExp(`^${re}$`);
}

function matches(parts, segs) {
  if (segs.length === 0) return parts.length === 0;
  if (segs[0] === '**') {
    for (let i = 0; i <= parts.length; i++) {
      if (matches(parts.slice(i), segs.slice(1))) return true;
    }
    return false;
  }
  return parts.length > 0 && segmentRegExp(segs[0]).test(parts[0]) && matches(parts.slice(1), segs.slice(1));
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const patterns = Array.isArray(pattern) ? pattern : [pattern];
  const out = [];
  let entries = [];
  try {
    entries = fs.readdirSync(cwd, { recursive: true });
  } catch {
    return out;
  }
  for (const rel of entries) {
    const parts = String(rel).split(path.sep);
    if (patterns.some((p) => matches(parts, p.split('/')))) out.push(String(rel));
  }
  return out;
}
