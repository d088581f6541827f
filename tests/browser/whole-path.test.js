// A student works through whole-path, the pipeline of several stages: a sender, a consumer
// landing payments in a raw table, and the nightly job summing them into daily revenue. Each
// hop is fixed in turn on the canvas; the one left wrong shows its stage in the failure, and
// the replay lights the nodes of both stages.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openBrowser, screenshot } from './harness.js';

let browser;
let page;

before(async () => {
  browser = await openBrowser();
  page = browser.page;
});

after(async () => {
  await browser?.close();
});

const node = (id) => page.locator(`g.node[data-node="${id}"]`);
const summary = (id) => node(id).locator('.node-summary');
const result = (id) => page.locator(`.result[data-requirement="${id}"]`);
const choice = (option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`);
const PATH = ['checkout', 'consumer', 'raw', 'nightly', 'revenue'];

/** The nodes' boxes on screen, by id. */
async function boxes() {
  const out = {};
  for (const id of PATH) out[id] = await node(id).locator('.node-body').boundingBox();
  return out;
}

test('whole-path opens on five nodes that read left to right, and Fit shows them all', async () => {
  await page.goto('/scenarios/whole-path');
  await node('revenue').waitFor();
  assert.equal(await page.locator('g.node').count(), 5);
  assert.equal(await page.locator('g.edge').count(), 4);
  // The raw table feeds the nightly job, so it has an output port; the revenue table, which
  // nothing reads, has none.
  assert.equal(await node('raw').locator('circle.port.out').count(), 1);
  assert.equal(await node('revenue').locator('circle.port.out').count(), 0);
  await page.getByRole('button', { name: 'Fit the design in view' }).click();
  const canvas = await page.locator('svg.canvas').boundingBox();
  const shown = await boxes();
  for (let i = 0; i < PATH.length; i += 1) {
    const b = shown[PATH[i]];
    assert.ok(b.x >= canvas.x && b.x + b.width <= canvas.x + canvas.width + 1, `${PATH[i]} is in view: ${JSON.stringify(b)}`);
    if (i > 0) assert.ok(b.x > shown[PATH[i - 1]].x, `${PATH[i]} stands right of ${PATH[i - 1]}`);
  }
  await screenshot(page, 'whole-path-start');
});

test('a table already written by the consumer refuses a second writer', async () => {
  await node('nightly').locator('circle.port.out').click();
  await node('raw').locator('circle.port.in').click();
  const notice = page.locator('.notice.refusal');
  await notice.waitFor();
  assert.match(await notice.innerText(), /"raw" is already written by "consumer", and one stage writes a table/);
  assert.equal(await page.locator('g.edge').count(), 4);
});

test('the student fixes the sender, the consumer and the raw table; the hop left wrong names the nightly job', async () => {
  await node('checkout').click();
  await choice('on_timeout', 'resend').click();
  await choice('idempotency_key', 'per_action').click();
  await node('consumer').click();
  await choice('offset_commit', 'after_write').click();
  await node('raw').click();
  await choice('write', 'insert_ignore').click();
  // The raw table's key shows for a write by key.
  assert.match(await page.locator('.inspector').innerText(), /by idempotency_key/);
  assert.match(await summary('raw').textContent(), /skip known keys/);
  // The SQL tab shows each stage's statements in the order they run.
  await page.getByRole('tab', { name: 'SQL' }).click();
  // The preview's engine answers a moment after the last change.
  await page.locator('.sql-view[aria-busy="false"]').waitFor();
  const stages = await page.locator('.sql-stage-title').allTextContents();
  assert.deepEqual(stages.map((s) => s.trim()), ['Stage 1: Stream consumer consumer', 'Stage 2: Batch job nightly']);
  assert.match(await page.locator('.sql-stage[data-stage="consumer"]').innerText(), /ON CONFLICT/);
  assert.match(await page.locator('.sql-stage[data-stage="nightly"]').innerText(), /SUM\(amount\)/);
  await screenshot(page, 'whole-path-sql');
  await page.getByRole('tab', { name: 'Results' }).click();
  await page.locator('button.check').click();
  const missed = result('one-revenue-row-per-day');
  await missed.locator('.failures').waitFor();
  assert.ok(await missed.evaluate((e) => e.classList.contains('missed')));
  assert.match(await missed.locator('.failures').innerText(), /the nightly job crashes/);
  assert.equal(await result('each-payment-once').evaluate((e) => e.classList.contains('passed')), true);
  await missed.locator('.what-happened').scrollIntoViewIfNeeded();
  await screenshot(page, 'whole-path-revenue-appended');
});

test('the replay lights the nodes of both stages and the tables each one changed', async () => {
  await result('one-revenue-row-per-day').getByRole('button', { name: /Replay/ }).click();
  const position = page.locator('.replay-position');
  await position.waitFor();
  const total = Number((await position.innerText()).match(/of (\d+)/)[1]);
  await page.evaluate(() => window.scrollTo(0, 0));
  const lit = new Set();
  const changed = new Set();
  let shot = false;
  for (let i = 0; i < total; i += 1) {
    for (const id of await page.locator('g.node.acting').evaluateAll((ns) => ns.map((n) => n.dataset.node))) lit.add(id);
    for (const id of await page.locator('g.node.changed').evaluateAll((ns) => ns.map((n) => n.dataset.node))) changed.add(id);
    if (!shot && changed.has('raw')) {
      shot = true;
      await screenshot(page, 'whole-path-replay-consumer');
    }
    if (i + 1 < total) await page.getByRole('button', { name: 'Next step' }).click();
  }
  assert.ok(lit.has('consumer') && lit.has('nightly'), `both stages act: ${[...lit]}`);
  assert.ok(changed.has('raw') && changed.has('revenue'), `the tables each stage changed are lit: ${[...changed]}`);
  // At the last step, the revenue row is doubled where readers see it.
  assert.match(await page.locator('.replay-when').innerText(), /nightly/);
  assert.match(await page.locator('.replay .tables').innerText(), /daily_revenue/);
  await screenshot(page, 'whole-path-replay-end');
  await page.getByRole('button', { name: 'Close replay' }).click();
});

test('with the revenue table replacing the day, every requirement passes', async () => {
  await node('revenue').click();
  await choice('write', 'delete_insert').click();
  assert.match(await summary('revenue').textContent(), /delete-insert/);
  await page.locator('button.check').click();
  await page.locator('.verdict-summary.passed').waitFor();
  assert.equal(await page.locator('.result.passed').count(), 3);
  assert.equal(await page.locator('.result.missed').count(), 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  await screenshot(page, 'whole-path-passed');
});

test('out-of-order: merging only newer versions offers the table\'s version column and keeps the newest status', async () => {
  await page.goto('/scenarios/out-of-order');
  await node('status').waitFor();
  await node('status').click();
  // The version column shows only for the write that compares it.
  const version = page.locator('.inspector fieldset.option:has(legend:text("Version column"))');
  assert.equal(await version.isVisible(), false);
  await choice('write', 'merge_if_newer').click();
  await version.waitFor();
  assert.match(await version.innerText(), /by version/);
  assert.match(await page.locator('.inspector').innerText(), /apply a row only when its version is newer/);
  assert.match(await summary('status').textContent(), /merge if newer/);
  await page.locator('button.check').click();
  await page.locator('.verdict-summary.passed').waitFor();
  assert.equal(await page.locator('.result.missed').count(), 0);
  await screenshot(page, 'out-of-order-merge-if-newer');
  assert.deepEqual(browser.problems, []);
});
