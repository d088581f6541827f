// An instructor and three students, each in a fresh browser: the instructor signs in with a
// grader token and makes a class, the students join it by its page and work, and the
// instructor sees the three of them and their progress, opens one attempt's design read-only
// and plays its replay; axe-core finds nothing serious on these pages.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { openBrowser, screenshot, axe } from './harness.js';

const TOKEN = process.env.PB_GRADER_TOKEN;
const SAFE_RETRY = JSON.parse(readFileSync(new URL('../../scenarios/safe-retry.json', import.meta.url), 'utf8'));

/** A student joins the class of `code` under `name` on its join page. */
async function join(page, code, name) {
  await page.goto(`/join/${code}`);
  await page.getByLabel('Your name, as your instructor will see it').fill(name);
  await page.getByRole('button', { name: 'Join' }).click();
  await page.getByRole('status').filter({ hasText: 'You are in' }).waitFor();
}

test('an instructor sees the class three students joined, and one attempt replayed', async () => {
  assert.ok(TOKEN, 'PB_GRADER_TOKEN names a grader token of the server (cargo xtask test makes one)');
  const teacher = await openBrowser({ bypassCSP: true });
  const students = [];
  const { page } = teacher;
  try {
    // Sign in: the token goes to the server once, and stays out of the page's storage and URL.
    await page.goto('/instructor');
    await page.getByLabel('Grader token').waitFor();
    await axe(page, 'the sign-in page');
    await page.getByLabel('Grader token').fill('pbt_not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: /unknown or revoked/ }).waitFor();
    await page.getByLabel('Grader token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Classes' }).waitFor();
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + location.href);
    assert.ok(!stored.includes(TOKEN), 'the token is in neither the storage nor the URL');
    const cookies = await teacher.context.cookies();
    const grader = cookies.find((c) => c.name === '__Host-pb_grader' || c.name === 'pb_grader');
    assert.ok(grader, 'the sign-in set the grader cookie');
    assert.equal(grader.httpOnly, true);
    assert.equal(grader.sameSite, 'Strict');

    // A class, with its join page.
    const name = `Data ${Date.now()}`;
    await page.getByLabel('New class').fill(name);
    await page.getByRole('button', { name: 'Create the class' }).click();
    const row = page.locator('tr', { hasText: name });
    await row.waitFor();
    const code = (await row.locator('code').innerText()).trim();
    assert.match(code, /^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$/);
    assert.match(await row.locator('.join-url').innerText(), new RegExp(`/join/${code}$`));
    await axe(page, 'the list of classes');

    // Three students, three browsers: Ada checks the starting design (it misses), Bob sends
    // a passing design, Cy only joins.
    for (const who of ['Ada', 'Bob', 'Cy']) {
      const browser = await openBrowser({ bypassCSP: true });
      students.push(browser);
      await join(browser.page, code, who);
    }
    await axe(students[2].page, 'the join page, joined');
    const ada = students[0].page;
    await ada.goto('/scenarios/safe-retry');
    await ada.locator('.current-class').filter({ hasText: name }).waitFor();
    await ada.locator('g.node[data-node="job"]').waitFor();
    await ada.locator('button.check').click();
    await ada.locator('.verdict-summary.missed').waitFor();
    const bob = students[1].page;
    const passed = await bob.evaluate(async (design) => {
      const classes = await (await fetch('/api/session/classes')).json();
      const r = await fetch('/api/submissions', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ scenario: 'safe-retry', design, class: classes[0].id }),
      });
      return (await r.json()).passed;
    }, SAFE_RETRY.reference_designs[0].design);
    assert.equal(passed, true);

    // The class: three students and their progress.
    await page.getByRole('link', { name }).click();
    await page.getByRole('heading', { name }).waitFor();
    const matrix = page.locator('table.matrix');
    await matrix.waitFor();
    const names = await matrix.locator('tbody th').allInnerTexts();
    assert.deepEqual(names, ['Ada', 'Bob', 'Cy']);
    const cell = (student, scenario) => matrix.locator('tbody tr', { hasText: student }).locator(`td[data-scenario="${scenario}"]`);
    assert.match(await cell('Ada', 'safe-retry').innerText(), /tried · 1 attempt/);
    assert.match(await cell('Bob', 'safe-retry').innerText(), /passed · 1 attempt\(s\), 0 before the first pass/);
    assert.match(await cell('Cy', 'safe-retry').innerText(), /not tried/);
    const progress = page.locator('table.progress tr[data-scenario="safe-retry"] td');
    assert.deepEqual((await progress.allInnerTexts()).slice(0, 3), ['1', '1', '1']);
    const missed = page.locator('ul.missed li[data-requirement="revenue-correct"]');
    assert.match(await missed.innerText(), /missed by 1 \(50% of those who tried\); 1 still missing: Ada$/);
    // Sorting by what they passed, most first: Bob leads.
    await matrix.getByRole('button', { name: 'Passed' }).click();
    await matrix.getByRole('button', { name: 'Passed' }).click();
    await page.locator('table.matrix th[aria-sort="descending"]').waitFor();
    assert.equal((await page.locator('table.matrix tbody th').allInnerTexts())[0], 'Bob');
    await screenshot(page, 'instructor-class');
    await axe(page, 'a class');

    // The preview setting: the students' app obeys it when it next starts.
    const status = ada.locator('.preview-status');
    await page.getByLabel('Live preview for students:').selectOption('nothing');
    await page.getByRole('status').filter({ hasText: 'Saved (nothing)' }).waitFor();
    await ada.reload();
    await ada.locator('g.node[data-node="job"]').waitFor();
    await status.filter({ hasText: 'no preview' }).waitFor();
    assert.equal(await ada.locator('.req-mark', { hasText: /[✓✗]/ }).count(), 0, 'no requirement is marked');
    await page.getByLabel('Live preview for students:').selectOption('lacks');
    await page.getByRole('status').filter({ hasText: 'Saved (lacks)' }).waitFor();
    await ada.reload();
    await status.filter({ hasText: /requirement\(s\) still lacking/ }).waitFor();
    assert.ok(await ada.locator('.req-mark', { hasText: '✗' }).count() > 0, 'what the design lacks is marked');
    assert.equal(await ada.locator('.req-mark', { hasText: '✓' }).count(), 0, 'what it meets is not told');
    await page.getByLabel('Live preview for students:').selectOption('everything');
    await page.getByRole('status').filter({ hasText: 'Saved (everything)' }).waitFor();

    // Ada's attempts, then the attempt's design read-only with its replay.
    await page.locator('ul.missed li[data-requirement="revenue-correct"] a', { hasText: 'Ada' }).click();
    await page.getByRole('heading', { name: 'Ada' }).waitFor();
    // Named by the scenario's title and the requirement's words, at a time with its zone.
    assert.match(await page.locator('li.attempt').innerText(), /A retry that doubles the money · \d{4}-\d\d-\d\d \d\d:\d\d UTC · 0 of 3 · ✗ missed: daily_revenue for 2026-01-10 is 25\.00/);
    await axe(page, "a student's attempts");
    await page.getByRole('link', { name: 'Open the design and its replay' }).click();
    await page.locator('g.node[data-node="job"]').waitFor();
    await page.locator('.verdict-summary.missed').waitFor();
    assert.equal(await page.locator('button.check').count(), 0, 'a recorded attempt cannot be checked again');
    assert.match(await page.locator('.attempt-note').innerText(), /^Ada's attempt of \d{4}-\d\d-\d\d \d\d:\d\d UTC · read-only\.$/);
    const result = page.locator('.result[data-requirement="revenue-correct"]');
    await result.getByRole('button', { name: /Replay/ }).click();
    await page.getByRole('button', { name: 'Next step' }).click();
    await page.locator('.replay-step').waitFor();
    assert.match(await page.locator('.replay-position').innerText(), /Step 2 of \d+/);
    await screenshot(page, 'instructor-replay');
    await axe(page, 'an attempt replayed');

    // Closing the class: a late student is refused with the reason.
    await page.goto('/instructor');
    await page.locator('tr', { hasText: name }).getByRole('button', { name: 'Close' }).click();
    await page.locator('tr', { hasText: name }).getByRole('button', { name: 'Reopen' }).waitFor();
    const late = await openBrowser();
    students.push(late);
    await late.page.goto(`/join/${code}`);
    await late.page.getByLabel('Your name, as your instructor will see it').fill('Dee');
    await late.page.getByRole('button', { name: 'Join' }).click();
    await late.page.getByRole('alert').filter({ hasText: /closed/ }).waitFor();
    // A member of the closed class is told at Check, and nothing is recorded.
    await ada.goto('/scenarios/safe-retry');
    await ada.locator('g.node[data-node="job"]').waitFor();
    await ada.locator('button.check').click();
    await ada.getByRole('alert').filter({ hasText: /is closed/ }).waitFor();
    const recorded = await ada.evaluate(async () => (await (await fetch('/api/submissions')).json()).length);
    assert.equal(recorded, 1, 'the refused Check recorded nothing');

    assert.deepEqual(teacher.problems.filter((p) => !/status of 40[19]/.test(p)), []);
    for (const s of students) assert.deepEqual(s.problems.filter((p) => !/status of 409/.test(p)), []);
  } finally {
    for (const s of students) await s.close();
    await teacher.close();
  }
});
