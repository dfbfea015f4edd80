import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { bootstrapDefaultAccount } from '../../src/admin/bootstrap';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { launchChromium, requestsElsewhere, watchPage, type PageWatch } from '../support/browser';
import { ADMIN_TOKEN, TestApp } from '../support/harness';
import { pollUntil } from '../responses/helpers';
import { answer, startReceiver } from '../webhooks/receiver';

/**
 * The account console (/console) in Debian's headless Chromium against the real app: a person signs in with the
 * quickstart key, manages keys, sees spend, streams in the playground, follows and cancels Responses, and sees
 * nothing of another account. Every page is checked for console errors and requests leaving the host, and
 * photographed into docs/screenshots (linked from the README).
 */
const ROOT = path.join(__dirname, '..', '..');
const SCREENSHOTS = path.join(ROOT, 'docs', 'screenshots');
const MODEL = 'gpt-4.1-mini';

jest.setTimeout(60_000);

let fake: FakeVendorServer;
let app: TestApp;
let browser: Browser;
/** The key `npm start` prints on the first start of an empty database (src/admin/bootstrap.ts). */
let quickstart: { accountId: string; key: string };
let other: { accountId: string; key: string; keyId: string; responseId: string };

beforeAll(async () => {
  // The console is built by `npm run build` (CI) or `npm start`; build it here when this checkout has not yet.
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-stale.js'), '--only', 'console'], {
    stdio: 'inherit',
  });
  fake = await startFakeOpenAI();
  app = await TestApp.start({
    env: { OPENAI_API_KEY: 'sk-console-test', OPENAI_BASE_URL: fake.baseURL, PROVIDER_MAX_RETRIES: '0' },
  });
  const deps = app.runtime.deps;
  const bootstrapped = await bootstrapDefaultAccount(deps);
  if (bootstrapped) {
    quickstart = bootstrapped;
  } else {
    // Postgres: no default account is created at start (operators use the admin CLI); the same account by hand.
    const account = await deps.accounts.createAccount({ name: 'default', balance: deps.config.admin.starterBalance });
    quickstart = {
      accountId: account.id,
      key: (await deps.accounts.createKey(account.id, { name: 'quickstart' })).key,
    };
  }
  const otherAccount = await app.createAccount({ name: 'someone else' });
  const response = await app.request('POST', '/v2/responses', {
    key: otherAccount.key,
    body: { model: MODEL, input: 'private matter', background: false },
  });
  expect(response.status).toBe(200);
  other = { ...otherAccount, responseId: response.body.id };
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await fake?.close();
});

afterEach(() => fake.reset());

/** A page whose console errors and requests are recorded (test/support/browser.ts). */
async function newPage(options: { width?: number } = {}) {
  const page = await browser.newPage({ viewport: { width: options.width ?? 1280, height: 900 } });
  return { page, ...watchPage(page) };
}

/** No console error and no request to another host (`allowed`: messages a test provokes on purpose). */
function expectClean(session: PageWatch, allowed: RegExp[] = []) {
  expect(requestsElsewhere(session, new URL(app.baseUrl).origin)).toEqual([]);
  expect(session.problems.filter((problem) => !allowed.some((pattern) => pattern.test(problem)))).toEqual([]);
}

async function signIn(page: Page, key: string) {
  await page.goto(`${app.baseUrl}/console`);
  await page.getByRole('textbox', { name: 'API key' }).fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API keys' }).waitFor();
}

async function screenshot(page: Page, name: string) {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `console-${name}.png`), fullPage: true });
}

const textOf = async (page: Page, testId: string) => (await page.getByTestId(testId).textContent()) ?? '';

describe('the console in a browser', () => {
  it('signs in with the quickstart key, kept in the tab only (no URL, no cookie), and refuses a wrong key', async () => {
    const session = await newPage();
    const { page } = session;
    await page.goto(`${app.baseUrl}/console`);
    await screenshot(page, 'sign-in');
    await page.getByRole('textbox', { name: 'API key' }).fill('sk-not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/not recognised|not valid|malformed/i);

    // Keyboard only: focus the field, type, Enter.
    await page.getByRole('textbox', { name: 'API key' }).fill('');
    await page.getByRole('textbox', { name: 'API key' }).focus();
    await page.keyboard.type(quickstart.key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByRole('row').filter({ hasText: 'this console' }).getByText('quickstart').waitFor();
    await screenshot(page, 'api-keys');

    expect(session.requests.some((url) => url.includes(quickstart.key))).toBe(false);
    expect(page.url()).not.toContain(quickstart.key);
    expect(await page.context().cookies()).toEqual([]);
    expect(await page.evaluate<string | null>("sessionStorage.getItem('switchyard.console.session')")).toContain(
      quickstart.key,
    );
    expect(await page.evaluate<number>('localStorage.length')).toBe(0);

    // A reload keeps the tab signed in; signing out forgets the key.
    await page.reload();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate<string | null>("sessionStorage.getItem('switchyard.console.session')")).toBeNull();
    expectClean(session, [/401 \(Unauthorized\)/]);
    await page.close();
  });

  it('creates a key shown once, disables it after a confirmation, and the API then refuses it', async () => {
    const session = await newPage();
    const { page } = session;
    await signIn(page, quickstart.key);
    await page.getByLabel('Name').fill('ci deploy');
    await page.getByRole('button', { name: 'Create key' }).click();
    const created = (await page.getByTestId('new-key').textContent())!.trim();
    expect(created.length).toBeGreaterThan(20);
    expect((await app.request('GET', '/v2/organization/balance', { key: created })).status).toBe(200);
    await page.getByRole('button', { name: 'Copy key' }).waitFor();
    await screenshot(page, 'new-key');
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByTestId('new-key').count()).toBe(0);

    // Its own key: a warning first (cancelled here).
    const ownRow = page.getByRole('row').filter({ hasText: 'this console' });
    await ownRow.getByRole('button', { name: /Disable/ }).click();
    await page.getByRole('dialog').getByText('This is the key this console is signed in with').waitFor();
    await screenshot(page, 'disable-own-key-warning');
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

    const row = page.getByRole('row').filter({ hasText: 'ci deploy' });
    await row.getByRole('button', { name: /Disable/ }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.getByText('This is the key this console').count()).toBe(0);
    await dialog.getByRole('button', { name: 'Disable key' }).click();
    await row.getByText('disabled').waitFor();
    const refused = await app.request('GET', '/v2/organization/balance', { key: created });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/disabled/);
    // The console's own key still works.
    expect((await app.request('GET', '/v2/organization/balance', { key: quickstart.key })).status).toBe(200);
    expectClean(session);
    await page.close();
  });

  it('shows a new transaction after a Response, with the balance and the spend charts', async () => {
    const session = await newPage();
    const { page } = session;
    await signIn(page, quickstart.key);
    const before = await app.request('GET', '/v2/organization/balance', { key: quickstart.key });
    const response = await app.request('POST', '/v2/responses', {
      key: quickstart.key,
      body: { model: MODEL, input: 'What does a ledger hold?', background: false },
    });
    expect(response.status).toBe(200);
    const after = await app.request('GET', '/v2/organization/balance', { key: quickstart.key });
    expect(after.body.balance).toBeLessThan(before.body.balance);

    await page.getByRole('link', { name: 'Usage' }).click();
    const transactions = page.getByTestId('transactions');
    await transactions.getByRole('cell', { name: response.body.id }).waitFor();
    const row = transactions.getByRole('row').filter({ hasText: response.body.id });
    expect(await row.textContent()).toContain('responses');
    expect(await row.textContent()).toContain(MODEL);
    expect(await textOf(page, 'balance')).toContain(((after.body.balance as number) / 100).toFixed(2));
    // Filtered by service: the Response's debit stays; by another service: it goes.
    await page.getByLabel('Service').selectOption('responses');
    await transactions.getByRole('cell', { name: response.body.id }).waitFor();
    await page.getByRole('img', { name: /Spend per day/ }).waitFor();
    await page.getByRole('img', { name: 'Spend per model' }).waitFor();
    await screenshot(page, 'usage');
    expectClean(session);
    await page.close();
  });

  it('streams in the playground: the text grows, the events are listed, usage and cost at the end', async () => {
    const words = ['Streams', ' arrive', ' one', ' word', ' at', ' a', ' time', ' here.'];
    fake.setDefault({
      text: words.join(''),
      textChunks: words,
      chunkDelayMs: 250,
      usage: { inputTokens: 12, outputTokens: 8 },
    });
    const session = await newPage();
    const { page } = session;
    await signIn(page, quickstart.key);
    await page.getByRole('link', { name: 'Playground' }).click();
    await page.getByLabel('Model').selectOption(MODEL);
    expect(
      await page
        .getByText(/in \/ .* out per/)
        .first()
        .textContent(),
    ).toMatch(/RUB|₽/);
    await page.getByLabel('Input').fill('Tell me how streams arrive.');
    await page.getByRole('button', { name: 'Send' }).click();

    // Part of the text is there while the rest is still on its way.
    await page.getByTestId('playground-text').filter({ hasText: 'one' }).waitFor();
    const partial = await textOf(page, 'playground-text');
    expect(partial.length).toBeLessThan(words.join('').length);
    await page.getByTestId('playground-usage').waitFor();
    expect(await textOf(page, 'playground-text')).toBe(words.join(''));
    expect(await textOf(page, 'playground-usage')).toMatch(/completed: 12 tokens in, 8 out · cost/);
    const events = await textOf(page, 'playground-events');
    expect(events).toContain('response.created');
    expect(events).toContain('response.output_text.delta');
    expect(events).toContain('response.completed');
    await screenshot(page, 'playground');
    expectClean(session);
    await page.close();
  });

  it('follows a running background Response live, then cancels it from its page', async () => {
    fake.setDefault({ text: 'first second third fourth fifth sixth', hangAfterDeltas: 3, chunkDelayMs: 150 });
    const created = await app.request('POST', '/v2/responses', {
      key: quickstart.key,
      body: { model: MODEL, input: 'Take your time.', background: true },
    });
    expect(created.status).toBe(200);
    const session = await newPage();
    const { page } = session;
    await signIn(page, quickstart.key);
    await page.getByRole('link', { name: 'Responses' }).click();
    await page.getByRole('link', { name: created.body.id }).click();
    await page.getByRole('heading', { name: created.body.id }).waitFor();

    await page.getByTestId('live-text').filter({ hasText: 'third' }).waitFor();
    expect(await textOf(page, 'live-text')).toBe('first second third');
    await screenshot(page, 'response-live');
    await page.getByRole('button', { name: 'Cancel Response' }).click();
    await page.getByTestId('status').getByText('cancelled').waitFor({ timeout: 20_000 });
    const stored = await app.request('GET', `/v2/responses/${created.body.id}`, { key: quickstart.key });
    expect(stored.body.status).toBe('cancelled');

    await page.getByRole('link', { name: '← Responses' }).click();
    await page.getByLabel('Status').selectOption('cancelled');
    await page.getByTestId('responses').getByRole('link', { name: created.body.id }).waitFor();
    await screenshot(page, 'responses');
    expectClean(session);
    await page.close();
  });

  it('resumes a dropped stream after the last event seen (starting_after) and ends with the whole text', async () => {
    const words = ['alpha', ' beta', ' gamma', ' delta', ' epsilon', ' zeta'];
    fake.setDefault({ text: words.join(''), textChunks: words, chunkDelayMs: 400 });
    const created = await app.request('POST', '/v2/responses', {
      key: quickstart.key,
      body: { model: MODEL, input: 'Six words, slowly.', background: true },
    });
    const session = await newPage();
    const { page } = session;
    await signIn(page, quickstart.key);
    await page.goto(`${app.baseUrl}/console/responses/${created.body.id}`);
    await page.getByTestId('live-text').filter({ hasText: 'beta' }).waitFor();
    app.dropConnections();
    await page.getByTestId('status').getByText('completed').waitFor({ timeout: 20_000 });
    await page.getByText(words.join('')).waitFor();
    const resumed = session.requests.filter(
      (url) => url.includes(`/v2/responses/${created.body.id}?`) && /starting_after=\d+/.test(url),
    );
    expect(resumed.length).toBeGreaterThan(0);
    expect(Number(/starting_after=(\d+)/.exec(resumed[0]!)![1])).toBeGreaterThan(1);
    // The cut connection is reported by the browser itself; nothing else may be.
    expectClean(session, [/ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE|network/i]);
    await page.close();
  });

  it('opens a finished background Response: input, output, usage, cost and the webhook outcome', async () => {
    const receiver = await startReceiver(answer(204));
    try {
      fake.setDefault({ text: 'The ledger holds every charge.', usage: { inputTokens: 9, outputTokens: 6 } });
      const created = await app.request('POST', '/v2/responses', {
        key: quickstart.key,
        body: {
          model: MODEL,
          input: 'What is in the ledger?',
          background: true,
          metadata: { webhook_url: `${receiver.url}/hook` },
        },
      });
      expect(created.status).toBe(200);
      const session = await newPage();
      const { page } = session;
      await signIn(page, quickstart.key);
      await page.goto(`${app.baseUrl}/console/responses/${created.body.id}`);
      await page.getByTestId('status').getByText('completed').waitFor();
      await page.getByText('The ledger holds every charge.').waitFor();
      await page.getByText('What is in the ledger?').waitFor();
      await page.getByText('9 in, 6 out').waitFor();
      // The webhook goes out after the Response is final: once the service recorded its outcome, the page shows it.
      await pollUntil(
        () => app.request('GET', `/v2/organization/responses/${created.body.id}`, { key: quickstart.key }),
        (reply) => reply.body.webhook?.status === 'delivered',
      );
      await page.reload();
      await page.getByText('delivered (HTTP 204)').waitFor();
      await screenshot(page, 'response-detail');
      expectClean(session);
      await page.close();
    } finally {
      await receiver.close();
    }
  });

  it('lists Runs by status and cancels a running one', async () => {
    const assistant = await app.request('POST', '/v2/assistants', {
      key: quickstart.key,
      body: { model: MODEL, name: 'Patient' },
    });
    expect(assistant.status).toBe(200);
    fake.setDefault({ hang: true });
    const run = await app.request('POST', '/v2/threads/runs', {
      key: quickstart.key,
      body: { assistant_id: assistant.body.id, thread: { messages: [{ role: 'user', content: 'Wait for me.' }] } },
    });
    expect(run.status).toBe(200);
    const session = await newPage();
    const { page } = session;
    await signIn(page, quickstart.key);
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    const row = page.getByRole('row').filter({ hasText: run.body.id });
    await row.getByRole('button', { name: `Cancel run ${run.body.id}` }).click();
    await row.getByText('cancelled').waitFor({ timeout: 20_000 });
    await page.getByLabel('Status').selectOption('cancelled');
    await page.getByRole('row').filter({ hasText: run.body.id }).waitFor();
    await page.getByLabel('Status').selectOption('completed');
    await page.getByText('No Runs with status completed.').waitFor();
    await page.getByLabel('Status').selectOption('');
    await screenshot(page, 'runs');
    expectClean(session);
    await page.close();
  });

  it("shows nothing of another account: not its Responses, not its keys, and its Response's page is not found", async () => {
    const session = await newPage();
    const { page } = session;
    await signIn(page, quickstart.key);
    expect(await page.getByText(other.keyId).count()).toBe(0);
    await page.getByRole('link', { name: 'Responses' }).click();
    await page.getByTestId('responses').getByRole('row').nth(1).waitFor();
    expect(await page.getByText(other.responseId).count()).toBe(0);
    await page.goto(`${app.baseUrl}/console/responses/${other.responseId}`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').first().textContent()).toMatch(/not found|No Response/i);
    expect(await page.getByText('private matter').count()).toBe(0);
    expectClean(session, [/404 \(Not Found\)/]);
    await page.close();
  });

  it('lets an operator sign in with the admin token and pick an account', async () => {
    const session = await newPage();
    const { page } = session;
    await page.goto(`${app.baseUrl}/console`);
    await page.getByRole('radio', { name: /Admin token/ }).check();
    await page.getByRole('textbox', { name: 'Admin token' }).fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Pick an account' }).waitFor();
    await page.getByLabel('Filter by name').fill('someone');
    await page.getByRole('button', { name: 'Open someone else' }).waitFor();
    await screenshot(page, 'account-picker');
    await page.getByRole('button', { name: 'Open someone else' }).click();
    await page.getByText('Operator · someone else').waitFor();
    await page.getByRole('cell', { name: other.keyId, exact: true }).waitFor();
    expect(await page.getByText('this console', { exact: true }).count()).toBe(0);
    expectClean(session);
    await page.close();
  });

  it('fits a phone: no page is wider than the screen', async () => {
    const session = await newPage({ width: 390 });
    const { page } = session;
    await signIn(page, quickstart.key);
    for (const name of ['Usage', 'Responses', 'Runs', 'Playground', 'API keys']) {
      await page.getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { level: 1 }).waitFor();
      const wide = await page.evaluate<string[]>(
        "[...document.querySelectorAll('body *')].filter((element) => element.getBoundingClientRect().right > 391 && !element.closest('.table-wrap')).map((element) => element.tagName + '.' + element.className).slice(0, 5)",
      );
      expect({ name, wide, width: await page.evaluate<number>('document.documentElement.scrollWidth') }).toEqual({
        name,
        wide: [],
        width: expect.any(Number),
      });
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390 + 1);
    }
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('img', { name: 'Spend per model' }).waitFor();
    await screenshot(page, 'usage-phone');
    expectClean(session);
    await page.close();
  });
});
