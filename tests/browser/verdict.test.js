// What a verdict shows beyond ✓ and ✗, in a fresh browser each time: the table diff of a
// missed whole-table requirement (marked in words as well as colour, side by side on a desktop,
// stacked on a phone), and under the verdict what it does not grade: the options this scenario
// does not put to the test and the requirements the design would miss under other failures.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openBrowser, screenshot, SHOTS } from './harness.js';

const helpers = (page) => {
  const node = (id) => page.locator(`g.node[data-node="${id}"]`);
  return {
    node,
    choice: (option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`),
  };
};

/** The diff of one requirement's card, once the verdict is in. */
async function diffOf(page, requirement) {
  const diff = page.locator(`.result[data-requirement="${requirement}"] .table-diff`);
  await diff.waitFor();
  return { diff, expected: diff.locator('table').nth(0), actual: diff.locator('table').nth(1) };
}

/** The one marked cell of a side's differing row: its text as a screen reader reads it, and its column's header. */
async function markedCell(table) {
  const row = table.locator('tbody tr.diff-differs');
  assert.equal(await row.count(), 1, 'one row differs');
  assert.match(await row.locator('th[scope="row"]').innerText(), /differs/);
  const mark = row.locator('mark');
  assert.equal(await mark.count(), 1, 'one cell of the row is marked');
  const column = await mark.evaluate((m) => m.closest('td').cellIndex);
  const header = await table.locator('thead th').nth(column).innerText();
  return { said: await mark.textContent(), header };
}

test('logical-date: the rerun that stamps the clock shows the one differing cell, marked', async () => {
  // A wide desktop, where the results panel has room for both sides of a small table.
  const browser = await openBrowser({ viewport: { width: 1600, height: 1000 } });
  const { page } = browser;
  const { node, choice } = helpers(page);
  try {
    await page.goto('/scenarios/logical-date');
    await node('job').click();
    // The starting design asks the clock for the day; the logical date leaves NOW() stamps.
    await choice('date_filter', 'logical_date').click();
    await page.locator('button.check').click();
    await page.locator('.verdict-summary.missed').waitFor();
    const { diff, expected, actual } = await diffOf(page, 'rerun-keeps-revenue');
    assert.equal(await diff.locator('.diff-summary').innerText(),
      'In daily_revenue: 1 row differs in the marked cells. Rows are paired by order_date.');
    assert.equal(await expected.locator('caption').innerText(), 'Expected daily_revenue');
    assert.equal(await actual.locator('caption').innerText(), 'Actual daily_revenue');
    assert.deepEqual(await markedCell(expected), { said: 'differs: 2026-01-11T23:55:00Z', header: 'loaded_at' });
    assert.deepEqual(await markedCell(actual), { said: 'differs: 2026-01-15T09:00:00Z', header: 'loaded_at' });
    // The row that did not change says so, and nothing is missing or extra.
    assert.match(await expected.locator('tbody tr.diff-same th').innerText(), /same/);
    assert.equal(await diff.locator('tr.diff-missing, tr.diff-extra').count(), 0);
    // A marked cell does not rest on colour: its background and outline both differ from a plain cell's.
    const look = await expected.locator('mark').evaluate((m) => {
      const s = getComputedStyle(m);
      return { outline: s.outlineStyle, weight: Number(s.fontWeight) };
    });
    assert.equal(look.outline, 'solid');
    assert.ok(look.weight >= 700, `a marked cell's weight is ${look.weight}`);
    // Side by side on a desktop, each whole in its box.
    const wraps = diff.locator('.table-wrap');
    const left = await wraps.nth(0).boundingBox();
    const right = await wraps.nth(1).boundingBox();
    assert.ok(right.x >= left.x + left.width && Math.abs(right.y - left.y) < 2,
      `expected at ${JSON.stringify(left)}, actual at ${JSON.stringify(right)}`);
    for (const i of [0, 1]) {
      assert.ok(await wraps.nth(i).evaluate((w) => w.scrollWidth <= w.clientWidth), `side ${i} is clipped`);
    }
    // The orders table differs in three rows, each in loaded_at only.
    const orders = await diffOf(page, 'rerun-keeps-orders');
    assert.equal(await orders.expected.locator('tbody tr.diff-differs mark').count(), 3);
    await diff.scrollIntoViewIfNeeded();
    await screenshot(page, 'table-diff');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('a phone: the diff stacks expected over actual, and a wide table scrolls in its own box', async () => {
  const browser = await openBrowser({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  const { page } = browser;
  const { node, choice } = helpers(page);
  try {
    await page.goto('/scenarios/logical-date');
    await node('job').tap();
    await page.locator('aside.side.sheet-open').waitFor();
    await choice('date_filter', 'logical_date').tap();
    await page.getByRole('button', { name: 'Close the options' }).tap();
    await page.locator('button.check').tap();
    const { expected, actual } = await diffOf(page, 'rerun-keeps-orders');
    const top = await expected.boundingBox();
    const below = await actual.boundingBox();
    assert.ok(below.y >= top.y + top.height, `actual (${below.y}) is below expected (${top.y}..${top.y + top.height})`);
    // The page itself never scrolls sideways; the six columns of orders scroll in their box.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow} px`);
    const wrap = page.locator('.result[data-requirement="rerun-keeps-orders"] .table-diff .table-wrap').first();
    const scrolls = await wrap.evaluate((w) => w.scrollWidth > w.clientWidth);
    assert.ok(scrolls, 'the wide table scrolls within its box');
    assert.equal(await wrap.getAttribute('tabindex'), '0');
    await expected.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, 'phone-table-diff.png') });
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('under the verdict: what this scenario did not test, and what other failures would break', async () => {
  const browser = await openBrowser();
  const { page } = browser;
  const { node, choice } = helpers(page);
  try {
    // delivery-promise's reference design: resend on silence, written by key. Its palette
    // only offers a consumer that commits before it writes, which this scenario never tests.
    await page.goto('/scenarios/delivery-promise');
    await node('shop').click();
    await choice('on_timeout', 'resend').click();
    await node('paid').click();
    await choice('write', 'insert_ignore').click();
    await page.locator('button.check').click();
    await page.locator('.verdict-summary.passed').waitFor();
    const untested = page.locator('section.beyond.untested');
    assert.equal(await untested.locator('h3').innerText(), 'What this scenario did not test');
    assert.match(await untested.locator('.not-graded').innerText(), /^Not graded\./);
    const commit = untested.locator('li[data-option="offset_commit"]');
    // In the inspector's words, naming no choice the scenario does not offer, and saying what
    // goes wrong in real life, with the scenario that shows it.
    assert.match(await commit.innerText(), /^“consumer” · Offset commit: Commit before write — In the stream consumer “consumer”: the only choice here, and committing the offset after the write would give the same result: this scenario never crashes the consumer between the commit and the write\. In real life, a consumer that commits before it writes loses the message when it crashes in between\. Learn it in offset-commit\.$/);
    assert.doesNotMatch(await commit.innerText(), /Commit after write|after_write|before_write/);
    assert.equal(await commit.getByRole('link', { name: 'offset-commit' }).getAttribute('href'), '/scenarios/offset-commit');
    // A consumer crash, which offset-commit teaches, would lose an order: the consumer acks
    // before it writes.
    const crash = page.locator('section.beyond.advisories .advisory[data-requirement="every-order-arrives"]');
    assert.match(await crash.innerText(), /the consumer crashes while it handles message 0/);
    assert.equal(await crash.getByRole('link', { name: 'offset-commit' }).getAttribute('href'), '/scenarios/offset-commit');
    await untested.scrollIntoViewIfNeeded();
    await screenshot(page, 'not-tested-here');

    // offset-commit's starting design: late duplicates, which dedupe-by-key teaches, would
    // write an order twice.
    await page.goto('/scenarios/offset-commit');
    await node('consumer').waitFor();
    await page.locator('button.check').click();
    await page.locator('.verdict-summary').waitFor();
    const beyond = page.locator('section.beyond.advisories');
    assert.equal(await beyond.locator('h3').innerText(), 'Beyond this scenario');
    assert.match(await beyond.locator('.not-graded').innerText(), /^Not graded\. Under other failures \(consumer crash, redelivery, at most 2 in a run\)/);
    const advisory = beyond.locator('.advisory[data-requirement="no-order-twice"]');
    assert.match(await advisory.innerText(), /No order appears twice in paid_orders\./);
    assert.match(await advisory.innerText(), /the producer retries message 0/);
    const link = advisory.getByRole('link', { name: 'dedupe-by-key' });
    assert.equal(await link.getAttribute('href'), '/scenarios/dedupe-by-key');
    // The score counts the scenario's own requirements only.
    assert.match(await page.locator('.verdict-summary').innerText(), /of 3 requirements met/);
    await beyond.scrollIntoViewIfNeeded();
    await screenshot(page, 'beyond-this-scenario');
    await link.click();
    await page.waitForURL('**/scenarios/dedupe-by-key');
    await page.locator('.scenario-id', { hasText: 'dedupe-by-key' }).waitFor();
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});
