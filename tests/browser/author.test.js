// The author page, on a server started with --watch --author over a copy of the scenarios
// (AUTHOR_BASE_URL, AUTHOR_SCENARIOS): a scenario's designs drawn read-only with their
// verdicts, a wrong design's replay, a design tried without recording an attempt, the palette
// solved, and a broken edit of the file shown on the page while students keep the last good
// one, marked stale.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { openBrowser, screenshot, axe } from './harness.js';

const AUTHOR_URL = process.env.AUTHOR_BASE_URL ?? 'http://127.0.0.1:3001';
const FOLDER = process.env.AUTHOR_SCENARIOS;

/** Saves a file as editors do: a temporary file renamed over it. */
function save(path, text) {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

test('the author page: reference and wrong designs with verdicts and replay, a design tried, a broken edit', async () => {
  assert.ok(FOLDER, 'AUTHOR_SCENARIOS names the watched folder');
  const browser = await openBrowser({ baseURL: AUTHOR_URL, bypassCSP: true });
  const { page } = browser;
  const node = (id) => page.locator(`g.node[data-node="${id}"]`);
  const choice = (option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`);
  const file = join(FOLDER, 'offset-commit.json');
  const good = readFileSync(file, 'utf8');
  try {
    await page.goto('/author');
    await page.getByRole('heading', { name: 'Every file validates' }).waitFor();
    // One row per scenario file of the watched folder.
    const files = readdirSync(FOLDER).filter((f) => f.endsWith('.json') && !f.includes('schema'));
    assert.equal(await page.locator('table.author-scenarios tbody tr').count(), files.length);
    await axe(page, 'the author page');
    await page.locator('a[href="/author/offset-commit"]').click();

    // The first reference design, drawn as the file has it, with its verdict.
    const first = page.locator('button.design-pick').first();
    await first.waitFor();
    assert.equal(await first.getAttribute('aria-pressed'), 'true');
    assert.match(await first.innerText(), /Reference[\s\S]*passes every requirement/);
    await page.locator('.verdict-summary.passed').waitFor();
    assert.equal(await page.locator('.result.passed').count(), 3);
    await page.locator('.read-only-note').waitFor();
    assert.equal(await page.locator('.palette').count(), 0, 'no palette on a read-only design');
    assert.equal(await page.locator('button.check').count(), 0, 'no Check on a read-only design');
    // Its options can be read, not changed; Delete removes nothing.
    await node('consumer').click();
    await page.locator('.inspector fieldset.options[disabled]').waitFor();
    assert.equal(await page.locator('.inspector input[value="after_write"]').isChecked(), true);
    await node('consumer').focus();
    await page.keyboard.press('Delete');
    assert.equal(await node('consumer').count(), 1);
    await page.locator('.notice', { hasText: 'read-only' }).waitFor();
    await screenshot(page, 'author-reference');
    await axe(page, 'a reference design on the author page');

    // A wrong design misses what the file says it must, and its counterexample replays.
    const wrong = page.locator('button.design-pick', { hasText: 'commit, then write' });
    assert.match(await wrong.innerText(), /misses[\s\S]*nothing-lost/);
    await wrong.click();
    assert.equal(await wrong.getAttribute('aria-pressed'), 'true');
    await page.locator('.verdict-summary.missed').waitFor();
    const missed = page.locator('.result[data-requirement="nothing-lost"]');
    await missed.getByRole('button', { name: /Replay/ }).click();
    const position = page.locator('.replay-position');
    await position.waitFor();
    const total = Number((await position.innerText()).match(/of (\d+)/)[1]);
    assert.ok(total >= 2, `the trace has ${total} steps`);
    await page.getByRole('button', { name: 'Next step' }).click();
    assert.match(await position.innerText(), /^Step 2 of/);
    await screenshot(page, 'author-wrong-replay');
    await axe(page, "a wrong design's replay on the author page");
    await page.getByRole('button', { name: 'Close replay' }).click();

    // Try a design: the starting design, changed and checked, and no attempt recorded.
    await page.getByRole('button', { name: 'Try a design' }).click();
    await page.locator('button.check').click();
    await page.locator('.verdict-summary.missed').waitFor();
    await node('consumer').click();
    await choice('offset_commit', 'after_write').click();
    await node('paid').click();
    await choice('write', 'insert_ignore').click();
    await page.locator('button.check').click();
    await page.locator('.verdict-summary.passed').waitFor();
    assert.equal(await page.locator('.result.passed').count(), 3);
    const attempts = await (await page.request.get('/api/submissions')).json();
    assert.deepEqual(attempts, [], 'trying a design records no attempt');
    await screenshot(page, 'author-tried');

    // Solve the palette: every design checked on the server, the summary shown.
    await page.getByRole('button', { name: 'Solve the palette' }).click();
    const summary = page.locator('pre.solve-summary');
    await summary.waitFor({ timeout: 60_000 });
    assert.match(await summary.innerText(), /^offset-commit: 6 designs the palette allows, 2 pass/);
    assert.match(await summary.innerText(), /Passing designs, simplest first:/);
    await screenshot(page, 'author-solved');

    // A broken edit: the page names the file and the place; students keep the last good file.
    save(file, good.replace('"order": ', '"order": "two", "ignored": '));
    const broken = page.locator('.files.broken');
    await broken.waitFor({ timeout: 60_000 });
    assert.match(await broken.innerText(), /offset-commit\.json: \$/);
    // The broken file's scenario is still served at its last good version, marked stale.
    await page.locator('ul.stale li', { hasText: 'offset-commit' }).waitFor({ timeout: 60_000 });
    const served = await (await page.request.get('/api/scenarios/offset-commit')).json();
    assert.equal(served.id, 'offset-commit', 'students still get the last good file');
    await screenshot(page, 'author-broken-file');
    save(file, good);
    await broken.waitFor({ state: 'detached', timeout: 60_000 });
    assert.deepEqual(browser.problems, []);
  } finally {
    if (readFileSync(file, 'utf8') !== good) save(file, good);
    await browser.close();
  }
});

test('a scenario file that does not validate opens with its problems in place, and a design is tried on it', async () => {
  assert.ok(FOLDER, 'AUTHOR_SCENARIOS names the watched folder');
  const browser = await openBrowser({ baseURL: AUTHOR_URL, bypassCSP: true });
  const { page } = browser;
  const node = (id) => page.locator(`g.node[data-node="${id}"]`);
  const choice = (option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`);
  const file = join(FOLDER, 'offset-commit.json');
  const good = readFileSync(file, 'utf8');
  try {
    // The first reference design replaced by the starting design, which misses: the file does
    // not validate, but its tables, streams and failures are whole.
    const json = JSON.parse(good);
    json.title = 'Offsets, being edited';
    json.reference_designs[0].design = json.starting_design;
    save(file, JSON.stringify(json, null, 2));
    await page.goto('/author');
    const listed = page.locator('ul.broken-files li', { hasText: 'offset-commit.json' });
    await listed.waitFor({ timeout: 60_000 });
    assert.match(await listed.innerText(), /a design can be tried on it/);
    await listed.getByRole('link').click();

    const panel = page.locator('section.broken-file');
    await panel.getByRole('heading', { name: 'offset-commit.json does not validate' }).waitFor();
    const problem = panel.locator('li.file-problem').first();
    await problem.waitFor();
    assert.match(await problem.innerText(), /^line \d+, column \d+ \$\.reference_designs\[0\][^:]*: reference design/);
    // The problem's line is marked in the file's text, and its link goes there.
    const line = Number((await problem.innerText()).match(/^line (\d+)/)[1]);
    const marked = panel.locator(`#file-line-${line}`);
    assert.equal(await marked.getAttribute('class'), 'file-line problem-line');
    assert.equal(await problem.getByRole('link').getAttribute('href'), `#file-line-${line}`);
    assert.match(await panel.locator('pre.file-text').innerText(), /Offsets, being edited/);
    await screenshot(page, 'author-file-does-not-validate');
    await axe(page, 'a file that does not validate on the author page');

    // Try a design on the file as it is now: checked on it, nothing recorded.
    assert.match(await page.locator('.workspace h1, h1').first().innerText(), /Offsets, being edited/);
    await page.locator('button.check').click();
    await page.locator('.verdict-summary.missed').waitFor();
    await node('consumer').click();
    await choice('offset_commit', 'after_write').click();
    await node('paid').click();
    await choice('write', 'insert_ignore').click();
    await page.locator('button.check').click();
    await page.locator('.verdict-summary.passed').waitFor();
    const attempts = await (await page.request.get('/api/submissions')).json();
    assert.deepEqual(attempts, [], 'trying a design records no attempt');
    await screenshot(page, 'author-file-tried');

    // A text that does not read as a scenario still opens, says why nothing can be tried.
    save(file, '{ "id": "offset-commit",\n  "order": ');
    await panel.locator('text=does not read as a scenario').waitFor({ timeout: 60_000 });
    assert.match(await panel.locator('li.file-problem').first().innerText(), /^line 2, column 11 \$/);
    assert.equal(await page.locator('button.check').count(), 0);
    assert.deepEqual(browser.problems, []);
  } finally {
    if (readFileSync(file, 'utf8') !== good) save(file, good);
    await browser.close();
  }
});
