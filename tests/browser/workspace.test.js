// The workspace in the hand: on a 390×844 touch phone one finger scrolls the page and two move
// and zoom the drawing; the options sheet leaves the design in view and folds to a bar; on a
// desktop no node can be dragged under the zoom controls; and the undo history outlives a
// reload of the page.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openBrowser, screenshot, axe } from './harness.js';

const PHONE = { bypassCSP: true, viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true };

const node = (page, id) => page.locator(`g.node[data-node="${id}"]`);
const choice = (page, option, value) => page.locator(`.inspector label.choice:has(input[name$="-${option}"][value="${value}"])`);
/** True when two boxes share any area. */
const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

/** The drawing's pan and zoom, read from the transform of its layer. */
async function view(page) {
  const t = await page.locator('svg.canvas g.layer').getAttribute('transform');
  const m = /translate\(([-\d.]+) ([-\d.]+)\) scale\(([-\d.]+)\)/.exec(t);
  assert.ok(m, `the layer's transform ${t} is not a pan and a zoom`);
  return { x: Number(m[1]), y: Number(m[2]), zoom: Number(m[3]) };
}

/** A point of the drawing, in the viewport, where no node or connection is under the finger. */
async function background(page) {
  return page.evaluate(() => {
    const r = document.querySelector('svg.canvas').getBoundingClientRect();
    for (let y = r.top + 20; y < r.bottom - 20; y += 10) {
      for (let x = r.left + 20; x < r.right - 20; x += 10) {
        const hit = document.elementFromPoint(x, y);
        if (hit && hit.closest('svg.canvas') && !hit.closest('g.node, g.edge')) return { x, y };
      }
    }
    return null;
  });
}

/** Real touches, through the browser's input pipeline: one list of fingers per step. */
async function touch(cdp, steps) {
  for (const [i, fingers] of steps.entries()) {
    const type = i === 0 ? 'touchStart' : i === steps.length - 1 ? 'touchEnd' : 'touchMove';
    const touchPoints = type === 'touchEnd' ? [] : fingers.map((p, id) => ({ x: p.x, y: p.y, id }));
    await cdp.send('Input.dispatchTouchEvent', { type, touchPoints });
  }
}

/** Straight-line steps from `from` to `to`, for each finger, ending with the lift. */
function path(from, to, n = 8) {
  const steps = [];
  for (let i = 0; i <= n; i += 1) {
    steps.push(from.map((p, f) => ({ x: p.x + ((to[f].x - p.x) * i) / n, y: p.y + ((to[f].y - p.y) * i) / n })));
  }
  steps.push([]);
  return steps;
}

test('phone: one finger on the drawing scrolls the page, two move it and spread to zoom, and the canvas says so', async () => {
  const browser = await openBrowser(PHONE);
  const { page } = browser;
  try {
    await page.goto('/scenarios/safe-rerun');
    await node(page, 'job').waitFor();
    const hint = page.locator('.zoom-hint.pointer-coarse');
    assert.match(await hint.innerText(), /One finger scrolls the page; two move and zoom the drawing/);
    assert.equal(await page.locator('.zoom-hint.pointer-fine').isVisible(), false);
    const cdp = await page.context().newCDPSession(page);

    await page.locator('svg.canvas').evaluate((svg) => svg.scrollIntoView({ block: 'center' }));
    const scrolled = await page.evaluate(() => window.scrollY);
    const before = await view(page);
    const at = await background(page);
    assert.ok(at, 'the drawing has a free spot to touch');
    // The finger pulls the page down, back toward the task above the drawing.
    assert.ok(scrolled > 150, `the page was scrolled to ${scrolled}`);
    await touch(cdp, path([at], [{ x: at.x, y: at.y + 150 }]));
    const afterSwipe = await page.evaluate(() => window.scrollY);
    assert.ok(afterSwipe < scrolled - 100, `one finger scrolled the page from ${scrolled} to ${afterSwipe}`);
    assert.deepEqual(await view(page), before, 'one finger left the drawing where it was');
    await screenshot(page, 'phone-one-finger-scrolled');

    // A finger on a node still moves that node, and a tap on the background clears the selection.
    await node(page, 'job').evaluate((g) => g.scrollIntoView({ block: 'center' }));
    const job = await node(page, 'job').locator('.node-body').boundingBox();
    const grab = { x: job.x + job.width / 2, y: job.y + job.height / 2 };
    const box = (await page.locator('svg.canvas').boundingBox());
    const to = { x: Math.min(grab.x + 40, box.x + box.width - 10), y: grab.y };
    await touch(cdp, path([grab], [to]));
    const moved = await node(page, 'job').locator('.node-body').boundingBox();
    assert.ok(moved.x > job.x + 15, `the node followed the finger from ${job.x} to ${moved.x}`);
    await page.locator('aside.side.sheet-open').waitFor();
    const free = await background(page);
    await touch(cdp, [[free], []]);
    await page.locator('aside.side.sheet-open').waitFor({ state: 'detached' });
    await page.locator('svg.canvas').evaluate((svg) => svg.scrollIntoView({ block: 'center' }));
    const still = await page.evaluate(() => window.scrollY);
    const start = await view(page);
    const a = await background(page);
    const b = { x: a.x + 80, y: a.y + 10 };
    await touch(cdp, path([a, b], [{ x: a.x + 60, y: a.y + 40 }, { x: b.x + 60, y: b.y + 40 }]));
    const panned = await view(page);
    assert.equal(await page.evaluate(() => window.scrollY), still, 'two fingers leave the page where it is');
    assert.equal(panned.zoom, start.zoom);
    assert.ok(Math.abs(panned.x - start.x - 60) < 2 && Math.abs(panned.y - start.y - 40) < 2,
      `two fingers moved the drawing from ${JSON.stringify(start)} to ${JSON.stringify(panned)}`);

    const c = await background(page);
    const d = { x: c.x + 60, y: c.y };
    await touch(cdp, path([c, d], [{ x: c.x - 30, y: c.y }, { x: d.x + 30, y: d.y }]));
    const zoomed = await view(page);
    assert.ok(zoomed.zoom > panned.zoom * 1.5, `spreading two fingers zoomed from ${panned.zoom} to ${zoomed.zoom}`);
    await screenshot(page, 'phone-two-fingers-zoomed');

    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('phone: the options sheet leaves the design in view, its close button clear of its title, and folds to a bar', async () => {
  const browser = await openBrowser(PHONE);
  const { page } = browser;
  try {
    await page.goto('/scenarios/safe-rerun');
    await node(page, 'job').tap();
    const sheet = page.locator('aside.side.sheet-open');
    await sheet.waitFor();
    await choice(page, 'transaction', 'per_run').waitFor();
    const height = 844;
    const open = await sheet.boundingBox();
    assert.ok(open.height <= height * 0.4 + 1, `the open sheet is ${open.height} px high`);
    const job = await node(page, 'job').locator('.node-body').boundingBox();
    assert.ok(job.y >= 0 && !overlap(job, open), `the selected node ${JSON.stringify(job)} is in view above the sheet ${JSON.stringify(open)}`);
    const close = await page.getByRole('button', { name: 'Close the options' }).boundingBox();
    const title = await page.locator('#inspector-heading').boundingBox();
    assert.ok(!overlap(close, title), `the close button ${JSON.stringify(close)} is clear of the title ${JSON.stringify(title)}`);
    await screenshot(page, 'phone-sheet-open');

    const fold = page.getByRole('button', { name: 'Fold to a bar' });
    assert.equal(await fold.getAttribute('aria-expanded'), 'true');
    await fold.tap();
    const bar = await sheet.boundingBox();
    assert.ok(bar.height < 130, `the folded sheet is a bar of ${bar.height} px`);
    assert.equal(await page.getByRole('button', { name: 'Show the options' }).getAttribute('aria-expanded'), 'false');
    // Folded, the task's requirements and the Check button can be brought above the bar.
    for (const what of ['section.requirements h2', 'button.check']) {
      await page.locator(what).evaluate((el) => el.scrollIntoView({ block: 'center' }));
      const seen = await page.locator(what).boundingBox();
      assert.ok(!overlap(seen, await sheet.boundingBox()), `${what} ${JSON.stringify(seen)} is clear of the bar`);
    }
    await screenshot(page, 'phone-sheet-folded');
    await page.getByRole('button', { name: 'Show the options' }).tap();
    await choice(page, 'transaction', 'per_run').waitFor();
    await axe(page, 'phone: the options sheet');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('desktop: a node dragged into the corner stays clear of the zoom controls', async () => {
  const browser = await openBrowser({ bypassCSP: true });
  const { page } = browser;
  try {
    await page.goto('/scenarios/safe-rerun');
    await node(page, 'job').waitFor();
    const canvas = await page.locator('svg.canvas').boundingBox();
    const zoom = await page.locator('.zoom').boundingBox();
    assert.ok(!overlap(canvas, zoom), `the zoom controls ${JSON.stringify(zoom)} lie outside the drawing ${JSON.stringify(canvas)}`);
    const job = await node(page, 'job').locator('.node-body').boundingBox();
    await page.mouse.move(job.x + job.width / 2, job.y + job.height / 2);
    await page.mouse.down();
    await page.mouse.move(canvas.x + canvas.width - 20, canvas.y + canvas.height - 10, { steps: 12 });
    await page.mouse.up();
    const moved = await node(page, 'job').locator('.node-body').boundingBox();
    assert.ok(moved.x > job.x + 50, 'the node was dragged');
    // What shows of the node is inside the drawing, and nothing of the drawing is under the controls.
    const shown = {
      x: Math.max(moved.x, canvas.x), y: Math.max(moved.y, canvas.y),
      width: Math.min(moved.x + moved.width, canvas.x + canvas.width) - Math.max(moved.x, canvas.x),
      height: Math.min(moved.y + moved.height, canvas.y + canvas.height) - Math.max(moved.y, canvas.y),
    };
    assert.ok(shown.width > 0 && shown.height > 0, 'part of the node shows');
    assert.ok(!overlap(shown, await page.locator('.zoom').boundingBox()), 'the zoom controls cover no part of the node');
    await screenshot(page, 'desktop-node-in-the-corner');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});

test('desktop: the undo history outlives a reload and a visit to another page', async () => {
  const browser = await openBrowser({ bypassCSP: true });
  const { page } = browser;
  try {
    await page.goto('/scenarios/safe-rerun');
    // Two edits: the orders table appends, then the job runs in one transaction.
    await node(page, 'orders').click();
    const append = choice(page, 'write', 'append').locator('input');
    assert.equal(await append.isChecked(), false);
    await choice(page, 'write', 'append').click();
    await node(page, 'job').click();
    await choice(page, 'transaction', 'per_run').click();
    const undo = page.getByRole('button', { name: 'Undo (Ctrl+Z)' });
    assert.equal(await undo.isEnabled(), true);

    await page.reload();
    await node(page, 'job').waitFor();
    assert.equal(await undo.isEnabled(), true, 'Undo can still bring back the edits made before the reload');
    await undo.click();
    await node(page, 'job').click();
    assert.equal(await choice(page, 'transaction', 'per_run').locator('input').isChecked(), false, 'the last edit was undone');
    await node(page, 'orders').click();
    assert.equal(await append.isChecked(), true, 'the edit before it stands');

    await page.goto('/');
    await page.goto('/scenarios/safe-rerun');
    await node(page, 'orders').click();
    assert.equal(await append.isChecked(), true);
    await undo.click();
    await node(page, 'orders').click();
    assert.equal(await append.isChecked(), false, 'the first edit was undone after a visit to another page');
    assert.equal(await undo.isEnabled(), false, 'nothing older is left to undo');
    await screenshot(page, 'desktop-undo-after-reload');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
  }
});
