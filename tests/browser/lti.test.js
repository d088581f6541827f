// An LTI 1.3 launch in Chromium, as a course page shows it: a test platform on another site
// (127.0.0.1, where the tool is localhost) frames the tool, the login goes to the platform's
// authorization endpoint, which signs an id_token with its own key and posts it back by an
// auto-submitted form. `cargo xtask` registers the platform with the server and passes
// LTI_PLATFORM_PORT and TOOL_URL.
//
// The server here speaks plain HTTP, so no cookie of the login survives the platform's
// cross-site form post and the launch signs no browser in by itself: the frame shows the
// resume page, which names the launched student and offers the way out, and the new window
// is signed in as that student, on the activity's scenario. An instructor's launch ends, the
// same way, on the course's class dashboard, signed in as its owner without a token.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { generateKeyPairSync, sign, randomUUID } from 'node:crypto';
import { openBrowser, screenshot } from './harness.js';

const PORT = Number(process.env.LTI_PLATFORM_PORT);
const TOOL = process.env.TOOL_URL;
const ISSUER = `http://127.0.0.1:${PORT}`;
const CLIENT = 'browser-tool';
const DEPLOYMENT = 'browser-deployment';
const LTI = 'https://purl.imsglobal.org/spec/lti/claim/';

const b64url = (data) => Buffer.from(data).toString('base64url');

/** The test platform: its key set, a course page framing the tool, and its authorization
 * endpoint, which answers the tool's login with a signed launch. */
// One key pair for every start of the platform: the tool keeps the key set it fetched, by
// the key's id.
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

function startPlatform() {
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'browser-platform-key', alg: 'RS256', use: 'sig' };
  const jwt = (claims) => {
    const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: jwk.kid }));
    const body = b64url(JSON.stringify(claims));
    return `${head}.${body}.${sign('sha256', Buffer.from(`${head}.${body}`), privateKey).toString('base64url')}`;
  };
  const seen = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, ISSUER);
    seen.push(url.pathname);
    if (url.pathname === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    } else if (url.pathname === '/course') {
      // `?as=instructor` launches the course's instructor instead of a learner.
      const hint = url.searchParams.get('as') === 'instructor' ? 'instructor-hint' : 'learner-hint';
      const login = new URL('/lti/login', TOOL);
      login.search = new URLSearchParams({
        iss: ISSUER, login_hint: hint, target_link_uri: `${TOOL}/lti/launch`, client_id: CLIENT, lti_deployment_id: DEPLOYMENT,
      }).toString();
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><html lang="en"><title>Course</title><h1>Week 3: exactly-once</h1>
        <iframe id="tool" title="Pipeline Builder" src="${login}" width="1200" height="700"></iframe>`);
    } else if (url.pathname === '/auth') {
      const q = url.searchParams;
      const now = Math.floor(Date.now() / 1000);
      const instructor = q.get('login_hint') === 'instructor-hint';
      const who = instructor
        ? {
          sub: 'browser-instructor', name: 'Edsger Dijkstra',
          [`${LTI}roles`]: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor'],
          [`${LTI}context`]: { id: 'browser-course', title: 'Distributed Data 301' },
        }
        : { sub: 'browser-learner', name: 'Grace Hopper' };
      const token = jwt({
        iss: ISSUER, aud: CLIENT, sub: 'browser-learner', iat: now, exp: now + 300, nonce: q.get('nonce'),
        name: 'Grace Hopper',
        [`${LTI}message_type`]: 'LtiResourceLinkRequest',
        [`${LTI}version`]: '1.3.0',
        [`${LTI}deployment_id`]: DEPLOYMENT,
        [`${LTI}target_link_uri`]: `${TOOL}/lti/launch`,
        [`${LTI}resource_link`]: { id: randomUUID() },
        [`${LTI}roles`]: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'],
        [`${LTI}custom`]: { scenario: 'safe-retry' },
        ...who,
      });
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><html lang="en"><title>Launching</title>
        <form method="post" action="${q.get('redirect_uri')}">
          <input type="hidden" name="id_token" value="${token}"><input type="hidden" name="state" value="${q.get('state')}">
        </form><script>document.forms[0].submit()</script>`);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  return new Promise((resolve) => server.listen(PORT, '127.0.0.1', () => resolve({ server, seen })));
}

test("a launch through the platform's auto-submitted form, in its frame, names the student and ends on the scenario signed in", async () => {
  assert.ok(PORT && TOOL, 'LTI_PLATFORM_PORT and TOOL_URL are set by cargo xtask');
  const platform = await startPlatform();
  const browser = await openBrowser();
  const { page, context } = browser;
  try {
    await page.goto(`${ISSUER}/course`);
    const frame = page.frameLocator('#tool');
    // The launch reached the resume page inside the course page's frame, which names whom
    // the launch was for.
    const open = frame.getByRole('button', { name: 'Open it in a new window' });
    await open.waitFor({ timeout: 30_000 });
    assert.deepEqual(platform.seen.slice(0, 3), ['/course', '/auth', '/jwks']);
    assert.equal(await frame.locator('main strong').first().innerText(), 'Grace Hopper');
    const inFrame = page.frames().find((f) => f.url().startsWith(TOOL));
    assert.ok(inFrame, 'the tool is in the frame');
    assert.equal(new URL(inFrame.url()).pathname, '/lti/resume');
    const code = new URL(inFrame.url()).searchParams.get('code');
    await screenshot(page, 'lti-frame');
    // The way out: a new window, signed in as the launched student, on the scenario.
    const [popup] = await Promise.all([context.waitForEvent('page'), open.click()]);
    await popup.waitForURL(`${TOOL}/scenarios/safe-retry`);
    await popup.locator('g.node[data-node="job"]').waitFor();
    assert.match(await popup.locator('.student').innerText(), /Grace Hopper/);
    await screenshot(popup, 'lti-new-window');
    // The code works once.
    const again = await popup.request.get(`${TOOL}/lti/resume?code=${code}`, { maxRedirects: 0 });
    assert.equal(again.status(), 403);
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
    platform.server.close();
  }
});

test("an instructor's launch opens the course's class dashboard signed in, no token pasted, as its owner", async () => {
  const platform = await startPlatform();
  const browser = await openBrowser();
  const { page, context } = browser;
  try {
    await page.goto(`${ISSUER}/course?as=instructor`);
    const open = page.frameLocator('#tool').getByRole('button', { name: 'Open it in a new window' });
    await open.waitFor({ timeout: 30_000 });
    const [popup] = await Promise.all([context.waitForEvent('page'), open.click()]);
    await popup.waitForURL(new RegExp(`^${TOOL}/instructor/classes/c-[0-9a-f]+$`));
    await popup.getByRole('heading', { name: 'Distributed Data 301' }).waitFor();
    await popup.getByRole('heading', { name: 'Staff' }).waitFor();
    assert.match(await popup.locator('table.staff').innerText(), /lti-s-[0-9a-f]+\s+Owner\s+lti/);
    assert.equal(await popup.getByLabel('Grader token').count(), 0, 'no token was asked for');
    await screenshot(popup, 'lti-instructor-dashboard');
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
    platform.server.close();
  }
});
