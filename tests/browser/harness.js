// Starts Debian's Chromium for the browser tests and keeps screenshots in one folder.
// `cargo xtask test` starts the server and sets BASE_URL, CHROMIUM and SCREENSHOT_DIR.

import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const BASE_URL = process.env.BASE_URL ?? 'http://127.0.0.1:3000';
const EXECUTABLE = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = process.env.SCREENSHOT_DIR ?? fileURLToPath(new URL('../../test-output/browser/', import.meta.url));

// Flags measured to work as root with no network (see BUILD-NOTES.md).
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** A fresh browser profile at 1280×800, as a new student would have; `options` change the
 * context (a phone's viewport and touch, or bypassCSP to inject a test script). */
export async function openBrowser(options = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'pipeline-builder-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: EXECUTABLE,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 800 },
    baseURL: BASE_URL,
    ...options,
  });
  context.setDefaultTimeout(15_000);
  const page = context.pages()[0] ?? await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // A 404 for a draft that does not exist yet is an answer, and a request made while the
  // test holds the browser offline fails on purpose; neither is a problem.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 404|ERR_INTERNET_DISCONNECTED/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  return {
    context, page, problems,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

let shot = 0;
/** Saves a numbered screenshot of the whole window. */
export async function screenshot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  shot += 1;
  await page.screenshot({ path: join(SHOTS, `${String(shot).padStart(2, '0')}-${name}.png`) });
}

/** Presses Tab (or Shift+Tab) until the focused element matches `selector`, as a keyboard user would. */
export async function tabTo(page, selector, { back = false, limit = 80 } = {}) {
  for (let i = 0; i < limit; i += 1) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
  }
  throw new Error(`${limit} presses of ${back ? 'Shift+Tab' : 'Tab'} never reached ${selector}`);
}

/** The centre of an element, in page coordinates. */
export async function centre(locator) {
  const box = await locator.boundingBox();
  if (!box) throw new Error('the element is not visible');
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** Runs axe-core on the page and fails on any serious or critical violation, naming each.
 * The page's Content-Security-Policy forbids the injected script: open the browser with
 * `bypassCSP: true`. */
export async function axe(page, where) {
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of violations) console.log(`# axe (${where}): ${v.impact} ${v.id}: ${v.help} — ${v.targets.slice(0, 5).join(', ')}`);
  assert.deepEqual(bad.map((v) => `${v.impact} ${v.id}: ${v.targets.join(', ')}`), [], `axe-core on ${where}`);
}

/** Waits until the verdict's summary is whole on screen, as a student reading it needs; fails
 * with where it was, the scroll and the window, sampled over the wait, when it never is. */
export async function verdictOnScreen(page, timeout = 15_000) {
  const seen = [];
  const until = Date.now() + timeout;
  while (Date.now() < until) {
    const at = await page.evaluate(() => {
      const r = document.querySelector('.verdict-summary')?.getBoundingClientRect();
      return r && { top: Math.round(r.top), bottom: Math.round(r.bottom), height: innerHeight, scrollY: Math.round(scrollY) };
    });
    if (at && at.top >= 0 && at.bottom <= at.height) return;
    seen.push(at);
    await page.waitForTimeout(100);
  }
  assert.fail(`the verdict never came whole on screen; sampled: ${JSON.stringify(seen.slice(0, 5))} … ${JSON.stringify(seen.slice(-5))}`);
}
