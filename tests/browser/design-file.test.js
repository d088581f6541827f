// The design file: a student downloads the design (the file Gradescope's autograder takes),
// and opens it again in a new, empty browser profile, with the keyboard and the file chooser
// as a person would; a file for another scenario, or no design at all, is refused in words.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBrowser, screenshot, tabTo } from './harness.js';

const SCENARIO = 'safe-retry';
let folder;

before(() => {
  folder = mkdtempSync(join(tmpdir(), 'pipeline-builder-design-file-'));
});

after(() => {
  rmSync(folder, { recursive: true, force: true });
});

const helpers = (page) => {
  const node = (id) => page.locator(`g.node[data-node="${id}"]`);
  return {
    node,
    summary: (id) => node(id).locator('.node-summary'),
    choice: (option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`),
    picked: (option, value) => page.locator(`.inspector input[name$="-${option}"][value="${value}"]`),
    nodeIds: () => page.locator('g.node').evaluateAll((nodes) => nodes.map((n) => n.dataset.node).sort()),
    fileInput: () => page.locator('input[type="file"][aria-label="Design file to open"]'),
    notice: () => page.locator('.notice'),
  };
};

/** Downloads the design with the keyboard (Tab to the button, Enter) and reads the file. */
async function download(page, name, back = false) {
  await tabTo(page, 'button.download-design', { back });
  const [file] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
  assert.equal(file.suggestedFilename(), `${SCENARIO}-design.json`);
  const path = join(folder, name);
  await file.saveAs(path);
  return { path, json: JSON.parse(readFileSync(path, 'utf8')) };
}

let saved;

test('the design downloads as the file the autograder takes', async () => {
  const browser = await openBrowser();
  const { page } = browser;
  const { node, summary, choice } = helpers(page);
  try {
    await page.goto(`/scenarios/${SCENARIO}`);
    await node('orders').waitFor();
    // Both controls are buttons with names, and the file input has a label.
    await page.getByRole('button', { name: 'Download design' }).waitFor();
    await page.getByRole('button', { name: 'Open design' }).waitFor();
    assert.equal(await helpers(page).fileInput().count(), 1);
    assert.equal(await helpers(page).fileInput().getAttribute('accept'), '.json,application/json');

    await node('orders').click();
    await choice('write', 'delete_insert').click();
    assert.match(await summary('orders').textContent(), /delete-insert/);

    // Before any Check the app knows no hash of the scenario: the file has none.
    const first = await download(page, 'before-check.json');
    assert.deepEqual(Object.keys(first.json).sort(), ['design', 'scenario']);
    assert.equal(first.json.scenario, SCENARIO);
    assert.match(await helpers(page).notice().innerText(), /Downloaded safe-retry-design\.json/);

    // After a Check, the server's hash of the scenario goes with the design.
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/submissions') && r.request().method() === 'POST'),
      page.locator('button.check').click(),
    ]);
    const hash = (await answer.json()).verdict.scenario_hash;
    assert.match(hash, /^sha256:[0-9a-f]{64}$/);
    await page.locator('.verdict-summary').waitFor();
    // From Check, the button is a few Shift+Tabs back.
    saved = await download(page, 'design.json', true);
    const { json } = saved;
    assert.deepEqual(Object.keys(json).sort(), ['design', 'scenario', 'scenario_hash']);
    assert.equal(json.scenario, SCENARIO);
    assert.equal(json.scenario_hash, hash);
    assert.deepEqual(Object.keys(json.design).sort(), ['edges', 'nodes']);
    const orders = json.design.nodes.find((n) => n.id === 'orders');
    assert.equal(orders.options.write, 'delete_insert');
    assert.deepEqual(json.design.nodes.map((n) => n.id).sort(), await helpers(page).nodeIds());
    assert.equal(json.design.edges.length, await page.locator('g.edge').count());
    await screenshot(page, 'design-downloaded');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('a new profile opens the downloaded file; a file for another scenario is refused', async () => {
  assert.ok(saved, 'the download step ran');
  const browser = await openBrowser();
  const { page } = browser;
  const { node, summary, picked, nodeIds, fileInput, notice } = helpers(page);
  try {
    await page.goto(`/scenarios/${SCENARIO}`);
    await node('orders').waitFor();
    // A new student: the starting design.
    assert.match(await summary('orders').textContent(), /append/);

    // The file chooser, from the Open design button.
    const [chooser] = await Promise.all([
      page.waitForEvent('filechooser'),
      page.getByRole('button', { name: 'Open design' }).click(),
    ]);
    await chooser.setFiles(saved.path);
    await notice().filter({ hasText: 'Opened design.json' }).waitFor();
    assert.match(await summary('orders').textContent(), /delete-insert/);
    assert.deepEqual(await nodeIds(), saved.json.design.nodes.map((n) => n.id).sort());
    assert.equal(await page.locator('g.edge').count(), saved.json.design.edges.length);
    await node('orders').click();
    assert.ok(await picked('write', 'delete_insert').isChecked());
    await screenshot(page, 'design-opened');

    // One step of Undo brings back the design the student had; Redo the opened one.
    await page.getByRole('button', { name: /^Undo/ }).click();
    assert.match(await summary('orders').textContent(), /append/);
    await page.getByRole('button', { name: /^Redo/ }).click();
    assert.match(await summary('orders').textContent(), /delete-insert/);
    const before = await page.locator('g.node .node-summary').allTextContents();

    // An export for another scenario: refused, named by its title, the canvas unchanged.
    const other = { ...saved.json, scenario: 'offset-commit' };
    const otherPath = join(folder, 'offset-commit-design.json');
    writeFileSync(otherPath, JSON.stringify(other));
    await fileInput().setInputFiles(otherPath);
    const refusal = notice().filter({ hasText: 'This file is a design for' });
    await refusal.waitFor();
    assert.equal(await refusal.innerText(), 'This file is a design for “Bookmark first, or write first?”, not for this scenario.');
    assert.ok(await refusal.evaluate((e) => e.classList.contains('refusal')));
    assert.deepEqual(await page.locator('g.node .node-summary').allTextContents(), before);
    await screenshot(page, 'design-other-scenario');

    // Not JSON, and JSON that is no design: refused in words, the canvas unchanged.
    await fileInput().setInputFiles({ name: 'notes.json', mimeType: 'application/json', buffer: Buffer.from('{"nodes": [') });
    await notice().filter({ hasText: 'not valid JSON' }).waitFor();
    await fileInput().setInputFiles({ name: 'other.json', mimeType: 'application/json', buffer: Buffer.from('{"hello": "world"}') });
    await notice().filter({ hasText: 'This file is not a design' }).waitFor();
    assert.deepEqual(await page.locator('g.node .node-summary').allTextContents(), before);
    // The refusals were no edits: one Undo still goes back to the starting design.
    await page.getByRole('button', { name: /^Undo/ }).click();
    assert.match(await summary('orders').textContent(), /append/);
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});
