// Staff roles, each person in a browser of their own: two owners make a section each; the
// owner of section A adds the TA on the class page; the TA signs in and sees only section A,
// as its TA, cannot change its settings nor give roles, grants a student an extension (which
// the student sees), and is refused section B.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBrowser, screenshot, axe } from './harness.js';

const OWNER_A = process.env.PB_TOKEN_OWNER_A;
const OWNER_B = process.env.PB_TOKEN_OWNER_B;
const TA_A = process.env.PB_TOKEN_TA_A;

/** Signs in at /instructor with `token`; the list of classes is on screen after it. */
async function signIn(page, token) {
  await page.goto('/instructor');
  await page.getByLabel('Grader token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Classes' }).waitFor();
}

/** Makes a class called `name`; its id. */
async function makeClass(page, name) {
  await page.getByLabel('New class').fill(name);
  await page.getByRole('button', { name: 'Create the class' }).click();
  const row = page.locator('tr', { hasText: name });
  await row.waitFor();
  assert.equal(await row.locator('td.role').innerText(), 'Owner');
  return row.getAttribute('data-class');
}

test('an owner adds a TA, who sees only that section and cannot change it', async () => {
  assert.ok(OWNER_A && OWNER_B && TA_A, 'cargo xtask browser makes the staff accounts and their tokens');
  const browsers = [];
  try {
    const open = async () => {
      const b = await openBrowser({ bypassCSP: true });
      browsers.push(b);
      return b.page;
    };
    const stamp = Date.now();
    const [sectionA, sectionB] = [`Section A ${stamp}`, `Section B ${stamp}`];
    const other = await open();
    await signIn(other, OWNER_B);
    const idB = await makeClass(other, sectionB);

    const owner = await open();
    await signIn(owner, OWNER_A);
    assert.equal(await owner.locator('tr', { hasText: sectionB }).count(), 0, "another owner's section is not listed");
    await makeClass(owner, sectionA);
    const code = (await owner.locator('tr', { hasText: sectionA }).locator('code').innerText()).trim();
    // A student joins section A.
    const student = await open();
    await student.goto(`/join/${code}`);
    await student.getByLabel('Your name, as your instructor will see it').fill('Eve');
    await student.getByRole('button', { name: 'Join' }).click();
    await student.getByRole('status').filter({ hasText: 'You are in' }).waitFor();
    await owner.getByRole('link', { name: sectionA }).click();
    await owner.getByRole('heading', { name: 'Staff' }).waitFor();
    assert.match(await owner.locator('table.staff').innerText(), /owner-a\s+Owner/);
    // The owner gives ta-a the role TA.
    await owner.getByLabel('Staff account').fill('ta-a');
    await owner.getByLabel('Role').selectOption('ta');
    await owner.getByRole('button', { name: 'Give the role' }).click();
    await owner.getByRole('status').filter({ hasText: 'ta-a is now TA.' }).waitFor();
    assert.match(await owner.locator('table.staff tr[data-account="ta-a"]').innerText(), /ta-a\s+TA\s+owner-a/);
    // An account that does not exist is refused with the reason.
    await owner.getByLabel('Staff account').fill('nobody-here');
    await owner.getByRole('button', { name: 'Give the role' }).click();
    await owner.getByRole('status').filter({ hasText: /no staff account "nobody-here"/ }).waitFor();
    // The owner sets the class's due date and refuses late attempts.
    await owner.getByLabel('Due date for every scenario (your local time; empty: none)').fill('2031-01-02T09:00');
    await owner.getByLabel('After it').selectOption('refuse');
    await owner.getByRole('button', { name: 'Save the due dates' }).click();
    await owner.getByRole('status').filter({ hasText: /Saved: due 2031-01-0[123]/ }).waitFor();
    assert.match(await owner.locator('ul.due-dates').innerText(), /After the due date: attempts are refused/);
    await screenshot(owner, 'staff-owner-adds-ta');
    await axe(owner, 'a class with its staff');

    // The TA: section A only, as TA; no settings, no staff form.
    const ta = await open();
    await signIn(ta, TA_A);
    const rows = ta.locator('table.classes tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 1, 'the TA sees one section');
    assert.match(await rows.first().innerText(), new RegExp(`${sectionA}[\\s\\S]*owner-a\\s+TA`));
    assert.equal(await rows.first().getByRole('button', { name: 'Close' }).count(), 0, 'a TA cannot close the class');
    await ta.getByRole('link', { name: sectionA }).click();
    await ta.getByRole('heading', { name: 'Staff' }).waitFor();
    assert.equal(await ta.getByLabel('Live preview for students:').isDisabled(), true);
    assert.equal(await ta.getByRole('button', { name: 'Give the role' }).count(), 0);
    assert.equal(await ta.getByRole('button', { name: 'Save the due dates' }).count(), 0, 'a TA cannot set due dates');
    await screenshot(ta, 'staff-ta-class');
    await axe(ta, "a TA's class");
    // The TA gives Eve an extension for safe-retry.
    await ta.locator('table.matrix').getByRole('link', { name: 'Eve' }).click();
    await ta.getByRole('heading', { name: 'Eve' }).waitFor();
    await ta.getByLabel('New due date (your local time)').fill('2031-03-04T17:30');
    await ta.getByLabel('Scenario (empty: every one)').fill('safe-retry');
    await ta.getByRole('button', { name: 'Give the extension' }).click();
    await ta.getByRole('status').filter({ hasText: /Eve may submit safe-retry until 2031-03-0[45]/ }).waitFor();
    await axe(ta, 'a student with the extension form');
    // The student sees the new due date on the scenario's page.
    await student.goto('/scenarios/safe-retry');
    await student.locator('.current-class').filter({ hasText: /due 2031-03-0[45]/ }).waitFor();
    // Section B, opened by its address, is refused.
    await ta.goto(`/instructor/classes/${idB}`);
    await ta.getByRole('alert').filter({ hasText: /ta-a has no role in this class/ }).waitFor();
    // Nothing went wrong but the refusals the test asked for (and the sign-in page's 401).
    const [, ownerA, , taA] = browsers;
    assert.deepEqual(ownerA.problems.filter((p) => !/status of 40[1]|status of 422/.test(p)), []);
    assert.deepEqual(taA.problems.filter((p) => !/status of 40[13]/.test(p)), []);
  } finally {
    for (const b of browsers) await b.close();
  }
});
