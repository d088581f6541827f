// What a student reads after Check, on a desktop and on a 390×844 touch phone: the notes under
// the verdict in the chapter's words (safe-rerun's clock), choices labelled by what they do
// (exactly-once), and a replay whose tables show the column that broke (logical-date), with
// axe-core finding nothing serious or critical on the page, the verdict and the replay.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBrowser, screenshot, axe, verdictOnScreen } from './harness.js';

const DESKTOP = { bypassCSP: true };
const PHONE = { bypassCSP: true, viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true };
const PROMISES = /at-least-once|at-most-once|exactly-once|effectively-once/i;
// Every raw option value of the design format with an underscore: a note never shows one.
const RAW = /\b(current_date_minus_1|logical_date|per_run|per_attempt|per_action|in_memory|before_write|after_write|with_write|give_up|delete_insert|insert_ignore|merge_if_newer)\b/;

const node = (page, id) => page.locator(`g.node[data-node="${id}"]`);
const choice = (page, option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`);

/** Taps on a phone, clicks on a desktop; on a phone the options sheet is closed after. */
async function pick(page, phone, nodeId, option, value) {
  if (phone) {
    await node(page, nodeId).tap();
    await page.locator('aside.side.sheet-open').waitFor();
    await choice(page, option, value).tap();
    await page.getByRole('button', { name: 'Close the options' }).tap();
  } else {
    await node(page, nodeId).click();
    await choice(page, option, value).click();
  }
}

async function check(page, phone) {
  const button = page.locator('button.check');
  if (phone) await button.tap(); else await button.click();
  await page.locator('.verdict-summary').waitFor();
}

for (const [name, options] of [['desktop', DESKTOP], ['phone', PHONE]]) {
  const phone = name === 'phone';

  test(`${name}: safe-rerun's note says the clock passes only because the rerun loads another day`, async () => {
    const browser = await openBrowser(options);
    const { page } = browser;
    try {
      await page.goto('/scenarios/safe-rerun');
      await pick(page, phone, 'job', 'transaction', 'per_run');
      await check(page, phone);
      await page.locator('.verdict-summary.passed').waitFor();
      const note = page.locator('section.beyond.untested li[data-option="date_filter"]');
      const text = await note.innerText();
      assert.match(text, /^“job” · Which day it loads: Logical date — /);
      assert.match(text, /with the clock, the rerun of 2026-01-15 09:00 loads 2026-01-14 and never touches 2026-01-10/);
      assert.match(text, /In real life, .*loads the wrong day/);
      assert.equal(await note.getByRole('link', { name: 'logical-date' }).getAttribute('href'), '/scenarios/logical-date');
      // No note shows a raw value, or the label of a choice this scenario does not offer.
      for (const li of await page.locator('section.beyond li').all()) {
        const said = await li.innerText();
        assert.doesNotMatch(said, RAW, said);
        assert.doesNotMatch(said, /Clock: CURRENT_DATE/, said);
      }
      await note.scrollIntoViewIfNeeded();
      await screenshot(page, `${name}-safe-rerun-clock-note`);
      await axe(page, `${name}: safe-rerun's verdict and its notes`);
      assert.deepEqual(browser.problems, []);
    } finally {
      await browser.close();
    }
  });

  test(`${name}: exactly-once's choices say what they do, and the promise is named only after Check`, async () => {
    const browser = await openBrowser(options);
    const { page } = browser;
    try {
      await page.goto('/scenarios/exactly-once');
      if (phone) await node(page, 'consumer').tap(); else await node(page, 'consumer').click();
      const labels = page.locator('.inspector label.choice');
      await labels.first().waitFor();
      const said = await labels.allInnerTexts();
      assert.ok(said.length >= 5, `the consumer offers ${said.length} choices`);
      for (const words of said) assert.doesNotMatch(words, PROMISES, words);
      assert.match(said.join('\n'), /Offset with the rows/);
      // Nothing on the node or in the SQL names a promise either.
      assert.doesNotMatch(await page.locator('g.node').allInnerTexts().then((t) => t.join(' ')), PROMISES);
      await screenshot(page, `${name}-exactly-once-choices`);
      await axe(page, `${name}: the scenario page with the inspector open`);
      assert.deepEqual(browser.problems, []);
    } finally {
      await browser.close();
    }
  });

  test(`${name}: logical-date's replay shows loaded_at, highlighted, and no table is clipped`, async () => {
    const browser = await openBrowser(options);
    const { page } = browser;
    try {
      await page.goto('/scenarios/logical-date');
      await pick(page, phone, 'job', 'date_filter', 'logical_date');
      await check(page, phone);
      const card = page.locator('.result[data-requirement="rerun-keeps-orders"]');
      await card.locator('.table-diff').waitFor();
      // The diff shows the rows; the sentence above it no longer lists them as tuples.
      const versus = await card.locator('.expected-actual').innerText();
      assert.doesNotMatch(versus, /\(101, /, versus);
      assert.match(versus, /orders unchanged: 4 rows/);
      const replay = card.getByRole('button', { name: /Replay/ });
      if (phone) await replay.tap(); else await replay.click();
      await page.locator('.replay-step').waitFor();
      // Step to where the requirement is missed.
      const next = page.getByRole('button', { name: 'Next step' });
      while (await next.isEnabled()) {
        // On a phone the drawing stays at the top during a replay: the controls are used below it.
        await next.evaluate((b) => b.scrollIntoView({ block: 'end' }));
        if (phone) {
          // A finger's tap where the button is drawn in the replay sheet.
          const b = await next.boundingBox();
          await page.touchscreen.tap(b.x + b.width / 2, b.y + b.height / 2);
        } else {
          await next.click();
        }
      }
      await page.locator('.went-wrong-note').waitFor();
      const orders = page.locator('section.replay .table-wrap', { has: page.locator('caption', { hasText: /^orders/ }) });
      const header = orders.locator('th', { hasText: 'loaded_at' });
      assert.match(await header.getAttribute('class'), /failing/);
      assert.match(await header.innerText(), /loaded_at/);
      assert.ok(await orders.locator('td.failing.wrong').count() >= 3, 'the rerun\'s new stamps are marked');
      assert.match(await orders.locator('td.failing.wrong').first().textContent(), /^\s*differs: 2026-01-15/);
      // Nothing is cut off for good: a table fits its box, or scrolls in it with shadows at
      // its edges, and loaded_at, the failing column, is scrolled into the box.
      for (const wrap of await page.locator('section.replay .table-wrap').all()) {
        const [scrolls, background] = await wrap.evaluate((w) => [w.scrollWidth > w.clientWidth + 1, getComputedStyle(w).backgroundImage]);
        if (scrolls) assert.match(background, /radial-gradient/, 'a wide table has no cue that it scrolls');
      }
      await page.waitForFunction(() => {
        const th = [...document.querySelectorAll('section.replay th.failing')].find((h) => h.textContent.includes('loaded_at'));
        const wrap = th?.closest('.table-wrap');
        if (!wrap) return false;
        const a = th.getBoundingClientRect();
        const b = wrap.getBoundingClientRect();
        return a.left >= b.left - 1 && a.right <= b.right + 1;
      });
      // The SQL wraps rather than running off its box.
      const sql = page.locator('section.replay pre.sql').first();
      if (await sql.count()) {
        assert.equal(await sql.evaluate((p) => getComputedStyle(p).whiteSpace), 'pre-wrap');
        assert.ok(await sql.evaluate((p) => p.scrollWidth <= p.clientWidth + 1), 'the SQL box is clipped');
      }
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow} px`);
      await orders.scrollIntoViewIfNeeded();
      await screenshot(page, `${name}-logical-date-replay`);
      await axe(page, `${name}: logical-date's replay`);
      assert.deepEqual(browser.problems, []);
    } finally {
      await browser.close();
    }
  });
}

test('desktop: the wheel over the canvas scrolls the page, Ctrl + wheel zooms, and the canvas says so', async () => {
  // A short window, so that the page has room to scroll.
  const browser = await openBrowser({ viewport: { width: 1280, height: 600 } });
  const { page } = browser;
  try {
    await page.goto('/scenarios/safe-retry');
    await node(page, 'job').waitFor();
    assert.equal(await page.locator('.zoom-hint.pointer-fine').innerText(), 'Ctrl/⌘ + wheel or pinch to zoom');
    assert.equal(await page.locator('.zoom-hint.pointer-coarse').isVisible(), false, 'a mouse is not told about fingers');
    const level = () => page.locator('.zoom-level').innerText();
    const before = await level();
    const box = await page.locator('svg.canvas').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + 40);
    await page.mouse.wheel(0, 300);
    await page.waitForFunction(() => window.scrollY > 0);
    assert.equal(await level(), before, 'the wheel alone does not zoom');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.mouse.move(box.x + box.width / 2, box.y + 40);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -100);
    await page.keyboard.up('Control');
    await page.waitForFunction((b) => document.querySelector('.zoom-level')?.textContent !== b, before);
    assert.equal(await page.evaluate(() => window.scrollY), 0, 'Ctrl + wheel does not scroll the page');
    await screenshot(page, 'desktop-wheel-zoom');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

/** True when two boxes share any area. */
const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

test('phone: Fit brings every node of whole-path on screen, a toast never covers a node, the verdict comes into view', async () => {
  const browser = await openBrowser(PHONE);
  const { page } = browser;
  try {
    await page.goto('/scenarios/whole-path');
    await node(page, 'revenue').waitFor();
    await page.getByRole('button', { name: 'Fit the design in view' }).tap();
    const canvas = await page.locator('svg.canvas').boundingBox();
    const ids = await page.locator('g.node').evaluateAll((gs) => gs.map((g) => g.dataset.node));
    assert.equal(ids.length, 5);
    const boxes = [];
    for (const id of ids) {
      const b = await node(page, id).locator('.node-body').boundingBox();
      assert.ok(b.x >= canvas.x - 1 && b.y >= canvas.y - 1 && b.x + b.width <= canvas.x + canvas.width + 1
        && b.y + b.height <= canvas.y + canvas.height + 1, `${id} at ${JSON.stringify(b)} is not inside the canvas ${JSON.stringify(canvas)}`);
      boxes.push([id, b]);
    }
    await screenshot(page, 'phone-whole-path-fit');
    // Tapping a port starts a connection and says so, in a strip that covers no node.
    await page.locator('g.node[data-node="consumer"] circle.port.out').tap();
    const notice = page.locator('.notice:not(.empty)');
    await notice.waitFor();
    assert.match(await notice.innerText(), /\S/);
    const toast = await notice.boundingBox();
    for (const [id, b] of boxes) {
      const now = await node(page, id).locator('.node-body').boundingBox();
      assert.ok(!overlap(toast, now), `the notice ${JSON.stringify(toast)} covers ${id} ${JSON.stringify(now)} (was ${JSON.stringify(b)})`);
    }
    await screenshot(page, 'phone-connecting-notice');
    await page.locator('svg.canvas').press('Escape');
    // Check, far below on a phone: the verdict is brought on screen.
    await page.locator('button.check').tap();
    const summary = page.locator('.verdict-summary');
    await summary.waitFor();
    await verdictOnScreen(page);
    await screenshot(page, 'phone-verdict-in-view');
    await axe(page, 'phone: whole-path with its verdict');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});
