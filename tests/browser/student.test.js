// What students found in a usability session, each in a fresh browser, clicking, tapping and
// typing like a person: no lost work, a phone, the inspector's words, the keyboard's focus,
// and what axe-core measures of the pages.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openBrowser, screenshot, tabTo, centre, axe, SHOTS, verdictOnScreen } from './harness.js';

const helpers = (page) => {
  const node = (id) => page.locator(`g.node[data-node="${id}"]`);
  return {
    node,
    summary: (id) => node(id).locator('.node-summary'),
    choice: (option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`),
    focused: () => page.evaluate(() => document.activeElement?.closest('g.node')?.dataset.node ?? document.activeElement?.tagName),
  };
};

/** Every request the app made that failed or was answered with an error. */
function watchRequests(page) {
  const failed = [];
  page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.request().method()} ${r.url()}`); });
  page.on('requestfailed', (r) => failed.push(`failed ${r.method()} ${r.url()}`));
  return failed;
}

test('a change survives leaving at once, by a reload and by the back link', async () => {
  const browser = await openBrowser();
  const { page } = browser;
  const { node, summary, choice } = helpers(page);
  try {
    const failed = watchRequests(page);
    await page.goto('/scenarios/safe-retry');
    await node('orders').waitFor();
    // A first visit asks for no draft the server cannot have.
    assert.deepEqual(failed, []);
    // Change an option and reload at once, inside the save's quiet moment.
    await node('orders').click();
    await choice('write', 'delete_insert').click();
    await page.reload();
    await node('orders').waitFor();
    assert.match(await summary('orders').textContent(), /delete-insert/);
    assert.match(await page.locator('.notice').innerText(), /draft/i);
    // Change another and take the app's own link back to the scenarios at once.
    await node('job').click();
    await choice('transaction', 'per_run').click();
    await page.locator('.crumbs a').click();
    await page.locator('.card').first().waitFor();
    // The server has it without the scenario being opened again.
    await page.waitForFunction(async () => {
      const r = await fetch('/api/drafts/safe-retry');
      return r.ok && (await r.json()).design.nodes.find((n) => n.id === 'job').options.transaction === 'per_run';
    }, null, { polling: 200, timeout: 5000 });
    await page.locator('.card[data-scenario="safe-retry"] a').click();
    await node('job').waitFor();
    assert.match(await summary('job').textContent(), /1 transaction/);
    assert.match(await summary('orders').textContent(), /delete-insert/);
    assert.deepEqual(failed, []);
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('the verdict comes back with the scenario, and moving a node does not make it stale', async () => {
  const browser = await openBrowser();
  const { page } = browser;
  const { node, choice } = helpers(page);
  try {
    await page.goto('/scenarios/safe-retry');
    await node('job').waitFor();
    await page.locator('button.check').click();
    await page.locator('.verdict-summary.missed').waitFor();
    // Moving a node changes no verdict.
    const grab = await centre(node('src').locator('.node-kind'));
    await page.mouse.move(grab.x, grab.y);
    await page.mouse.down();
    await page.mouse.move(grab.x + 20, grab.y + 60, { steps: 6 });
    await page.mouse.up();
    assert.equal(await page.locator('.stale').count(), 0);
    // Changing an option does.
    await node('job').click();
    await choice('transaction', 'per_run').click();
    await page.locator('.stale').waitFor();
    await page.keyboard.press('Control+z');
    await page.locator('.stale').waitFor({ state: 'detached' });
    // Reopened, the scenario shows the verdict of the design it shows.
    await page.reload();
    await node('job').waitFor();
    await page.locator('.verdict-summary.missed').waitFor();
    assert.equal(await page.locator('.result.missed').count() >= 1, true);
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('the inspector offers only what the scenario accepts, and problems speak its words', async () => {
  const browser = await openBrowser();
  const { page } = browser;
  const { node, choice } = helpers(page);
  try {
    await page.goto('/scenarios/dedupe-by-key');
    await node('consumer').waitFor();
    await node('consumer').click();
    await choice('dedupe', 'in_memory').click();
    const windows = page.locator('.inspector input[name$="-dedupe_window"]');
    await windows.first().waitFor();
    assert.deepEqual(await windows.evaluateAll((inputs) => inputs.map((i) => i.value)), ['2', '3', '4']);
    assert.equal(await page.locator('.inspector input[type="number"]').count(), 0);
    await choice('dedupe_window', '3').click();
    assert.ok(await page.locator('.inspector input[name$="-dedupe_window"][value="3"]').isChecked());
    // An unfinished design: the box names nodes and options as the inspector does.
    await page.getByRole('button', { name: /^Remove the connection consumer/ }).click();
    const problems = page.locator('.design-problems li');
    await problems.first().waitFor();
    const words = await problems.allInnerTexts();
    for (const w of words) {
      assert.doesNotMatch(w, /\$\.|nodes\[|dedupe_window|offset_commit|insert_ignore|delete_insert/, w);
    }
    assert.ok(words.some((w) => /Stream consumer “consumer”/.test(w)), `${words}`);
    // The server's refusal of a Check speaks the same words; its raw text is only a tooltip.
    await page.locator('button.check').click();
    const refusal = page.locator('.results .error');
    await refusal.waitFor();
    const said = await refusal.innerText();
    assert.doesNotMatch(said, /\$\.|nodes\[|dedupe_window|offset_commit/, said);
    assert.match(said, /Stream consumer “consumer”/);
    assert.match(await refusal.locator('li').first().getAttribute('title'), /\$\.nodes\[/);
    await screenshot(page, 'design-problems-in-words');
    // The refused Check is the one error the console may show.
    assert.deepEqual(browser.problems.filter((p) => !/status of 422/.test(p)), []);
  } finally {
    await browser.close();
  }
});

test('the keyboard keeps its place: Esc, removing a connection, moving a node', async () => {
  const browser = await openBrowser();
  const { page } = browser;
  const { node, focused } = helpers(page);
  try {
    await page.goto('/scenarios/safe-retry');
    await node('job').waitFor();
    await page.locator('body').focus();
    // Esc from the options returns to the node.
    await tabTo(page, 'g.node[data-node="job"]');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement.closest('.inspector') !== null), true);
    await page.keyboard.press('Escape');
    assert.equal(await focused(), 'job');
    // Removing a connection leaves the focus on the node it came from.
    await tabTo(page, 'g.node[data-node="rev"]');
    await page.keyboard.press('Enter');
    await tabTo(page, 'button[aria-label="Remove the connection job → rev"]');
    await page.keyboard.press('Enter');
    assert.equal(await page.locator('g.edge').count(), 2);
    assert.equal(await focused(), 'job');
    await page.keyboard.press('Control+z');
    assert.equal(await page.locator('g.edge').count(), 3);
    // A node moved by the keyboard stays in view, and the run of moves is one undo step.
    await tabTo(page, 'g.node[data-node="rev"]');
    const before = await node('rev').getAttribute('transform');
    for (let i = 0; i < 8; i += 1) await page.keyboard.press('Shift+ArrowRight');
    const wrap = await page.locator('.canvas-wrap').boundingBox();
    const box = await node('rev').locator('.node-body').boundingBox();
    assert.ok(box.x >= wrap.x - 1 && box.x + box.width <= wrap.x + wrap.width + 1, `the node is at ${box.x}..${box.x + box.width}, the canvas ${wrap.x}..${wrap.x + wrap.width}`);
    assert.notEqual(await node('rev').getAttribute('transform'), before);
    await page.keyboard.press('Control+z');
    assert.equal(await node('rev').getAttribute('transform'), before);
    await screenshot(page, 'keyboard-focus');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('a phone: offset-commit solved with taps only', async () => {
  const browser = await openBrowser({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  const { page } = browser;
  const { node, summary, choice } = helpers(page);
  try {
    await page.goto('/');
    await page.locator('.card[data-scenario="offset-commit"] a').tap();
    await node('consumer').waitFor();
    // A readable starting zoom, not a shrunk drawing.
    const zoom = Number((await page.locator('.zoom-level').innerText()).replace('%', ''));
    assert.ok(zoom >= 60, `the drawing opens at ${zoom} %`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow} px`);
    // Ports and buttons are at least 24 × 24 CSS px to a finger.
    const port = await node('consumer').locator('circle.port-hit').first().boundingBox();
    assert.ok(port.width >= 24 && port.height >= 24, `a port's target is ${port.width} × ${port.height}`);
    const small = await page.evaluate(() => [...document.querySelectorAll('button')]
      .filter((b) => b.offsetParent)
      .map((b) => [b.getAttribute('aria-label') || b.textContent.trim(), b.getBoundingClientRect()])
      .filter(([, r]) => r.width < 24 || r.height < 24)
      .map(([name, r]) => `${name} ${Math.round(r.width)}×${Math.round(r.height)}`));
    assert.deepEqual(small, []);
    // The inspector is a sheet over the drawing while a node is selected.
    assert.equal(await page.locator('aside.side').isVisible(), false);
    await node('consumer').tap();
    await page.locator('aside.side.sheet-open').waitFor();
    await choice('offset_commit', 'after_write').tap();
    assert.match(await summary('consumer').textContent(), /commit after write/);
    // The node stays in sight above the sheet.
    const sheet = await page.locator('aside.side').boundingBox();
    const picked = await node('consumer').locator('.node-body').boundingBox();
    assert.ok(picked.y >= 0 && picked.y + picked.height <= sheet.y, `the node (${picked.y}..${picked.y + picked.height}) is above the sheet (${sheet.y})`);
    await page.screenshot({ path: join(SHOTS, 'phone-inspector.png') });
    await page.getByRole('button', { name: 'Close the options' }).tap();
    await page.locator('aside.side.sheet-open').waitFor({ state: 'detached' });
    // The table stands at the right edge of the drawing: tap the part of it that shows.
    await node('paid').tap({ position: { x: 16, y: 30 } });
    await page.locator('aside.side.sheet-open').waitFor();
    await choice('write', 'insert_ignore').tap();
    assert.match(await summary('paid').textContent(), /skip known keys/);
    await page.getByRole('button', { name: 'Close the options' }).tap();
    await page.locator('button.check').tap();
    await page.locator('.verdict-summary.passed').waitFor();
    // The verdict is brought into view.
    await verdictOnScreen(page);
    assert.equal(await page.locator('.result.passed').count(), 3);
    await page.locator('.saved', { hasText: 'Draft saved' }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'phone-passed.png') });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SHOTS, 'phone-layout.png'), fullPage: true });
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('axe-core finds nothing serious: the catalogue, a missed verdict, a replay, a table diff', async () => {
  // The test injects axe-core as a script, which the page's Content-Security-Policy forbids.
  const browser = await openBrowser({ bypassCSP: true });
  const { page } = browser;
  try {
    await page.goto('/');
    await page.locator('.card').first().waitFor();
    await axe(page, 'the catalogue');
    await page.goto('/scenarios/safe-retry');
    await page.locator('g.node[data-node="job"]').waitFor();
    await page.locator('button.check').click();
    const missed = page.locator('.result[data-requirement="revenue-correct"]');
    await missed.waitFor();
    await missed.getByRole('button', { name: 'Show a hint' }).click();
    await missed.locator('details.trace summary').click();
    await axe(page, 'a scenario with a missed verdict');
    await missed.getByRole('button', { name: /Replay/ }).click();
    await page.getByRole('button', { name: 'Next step' }).click();
    await page.getByRole('button', { name: 'Next step' }).click();
    await page.locator('.replay-step').waitFor();
    await axe(page, 'a replay in progress');
    // A table diff, and what the verdict does not grade under it.
    await page.goto('/scenarios/logical-date');
    await page.locator('g.node[data-node="job"]').click();
    await page.locator('.inspector label.choice:has(input[name$="-date_filter"][value="logical_date"])').click();
    await page.locator('button.check').click();
    await page.locator('.result[data-requirement="rerun-keeps-revenue"] .table-diff').waitFor();
    await page.locator('section.beyond').first().waitFor();
    await axe(page, 'a table diff and what the verdict does not grade');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});
