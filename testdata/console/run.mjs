// Drives the toolgate console in a headless Debian chromium for
// internal/server/console/browser_test.go: one JSON command per line on stdin, one JSON
// answer per line on stdout ({"ok": true, ...} or {"ok": false, "error"}).
// The Go test decides what to do; this only does it in the page.
//
//   CHROMIUM=/usr/bin/chromium node run.mjs
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const userDataDir = mkdtempSync(join(tmpdir(), 'toolgate-console-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 },
});
context.setDefaultTimeout(Number(process.env.STEP_TIMEOUT_MS || 90000));
let page = context.pages()[0] || await context.newPage();
const consoleErrors = [];
const watch = (p) => {
  p.on('pageerror', (e) => consoleErrors.push(String(e)));
  p.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
};
watch(page);

const ready = (view) => page.waitForSelector(`body[data-ready="${view}"]`, { state: 'attached' });

const commands = {
  // goto opens url and waits until the view named is rendered; it answers
  // how long that took (navigation start to rendered), in ms.
  async goto({ url, view }) {
    const t0 = Date.now();
    await page.goto(url);
    await ready(view);
    return { ms: Date.now() - t0 };
  },
  // fresh opens a new page in the same context (same sessionStorage origin
  // rules as a new tab: none shared).
  async fresh() {
    await page.close();
    page = await context.newPage();
    watch(page);
    return {};
  },
  async fill({ selector, value }) { await page.fill(selector, value); return {}; },
  async upload({ selector, path }) { await page.setInputFiles(selector, path); return {}; },
  async select({ selector, value }) { await page.selectOption(selector, value); return {}; },
  async click({ selector }) { await page.click(selector); return {}; },
  async press({ selector, key }) { await page.press(selector, key); return {}; },
  async view({ name }) {
    const t0 = Date.now();
    await page.evaluate((n) => { location.hash = n; }, name);
    await ready(name);
    return { ms: Date.now() - t0 };
  },
  async waitText({ selector, text }) {
    await page.waitForFunction(([s, t]) => [...document.querySelectorAll(s)].some((e) => e.textContent.includes(t)), [selector, text]);
    return {};
  },
  async waitSelector({ selector }) { await page.waitForSelector(selector, { state: 'attached' }); return {}; },
  async url() { return { url: page.url() }; },
  async waitGone({ selector }) { await page.waitForSelector(selector, { state: 'detached' }); return {}; },
  async text({ selector }) { return { text: await page.textContent(selector) }; },
  // innerText is the text as rendered (layout applied), what a reader sees.
  async innerText({ selector }) { return { text: await page.innerText(selector) }; },
  async visible({ selector }) { return { visible: await page.locator(selector).first().isVisible() }; },
  async count({ selector }) { return { n: await page.locator(selector).count() }; },
  async session({ key }) { return { value: await page.evaluate((k) => sessionStorage.getItem(k), key) }; },
  async cookies() { return { n: (await context.cookies()).length }; },
  async focused() { return { text: await page.evaluate(() => document.activeElement && (document.activeElement.getAttribute('aria-label') || document.activeElement.textContent)) }; },
  async screenshot({ path }) { await page.screenshot({ path, fullPage: true }); return {}; },
  async errors() { return { errors: consoleErrors }; },
  // slow holds the page's requests whose URL ends with suffix for ms
  // before sending them: a slow server, seen from the page.
  async slow({ suffix, ms }) {
    await page.route((u) => u.pathname.endsWith(suffix), async (r) => {
      await new Promise((res) => setTimeout(res, ms));
      await r.continue().catch(() => {});
    });
    return {};
  },
  // attr is an attribute of the first element selector matches (null
  // when it has none).
  async attr({ selector, name }) { return { value: await page.getAttribute(selector, name) }; },
  // sleep waits ms in the page's clock.
  async sleep({ ms }) { await page.waitForTimeout(ms); return {}; },
  // viewport sets the page's size in CSS pixels: 640×450 in a 1280×900
  // window is what 200% zoom shows.
  async viewport({ width, height }) { await page.setViewportSize({ width, height }); return {}; },
  // overflow is how far the document is wider than the viewport (0: no
  // sideways scrolling; wide tables scroll inside their own box).
  async overflow() { return { px: await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth) }; },
};

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let answer;
  try {
    const cmd = JSON.parse(line);
    const f = commands[cmd.cmd];
    if (!f) throw new Error('unknown command ' + cmd.cmd);
    answer = { ok: true, ...(await f(cmd)) };
  } catch (e) {
    answer = { ok: false, error: String(e && e.message || e) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
await context.close();
rmSync(userDataDir, { recursive: true, force: true });
