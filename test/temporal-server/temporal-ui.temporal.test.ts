import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { workflowIdOf } from '../../src/engine/job-kind';
import { launchChromium, requestsElsewhere, watchPage } from '../support/browser';
import { TestApp, temporalAddress } from '../support/harness';
import { connectClient, describeOnTemporal } from './temporal-client';

/**
 * An operator in the Temporal Web UI that `npm run temporal` serves (headless Chromium): finds a customer's jobs by
 * `SwitchyardAccountId`, narrows them by `SwitchyardStatus`, opens a Response's workflow and reads its history, its
 * search attributes and its memo. No request leaves the host. Screenshots go to docs/screenshots/temporal-ui-*.png
 * (docs/operations.md, "Inspecting in the Temporal UI"). The UI listens on the gRPC port + 1000, as `temporal server
 * start-dev` and scripts/temporal.js place it, unless TEST_TEMPORAL_UI_URL says otherwise.
 */
const SCREENSHOTS = path.join(__dirname, '..', '..', 'docs', 'screenshots');
const uiUrl =
  process.env.TEST_TEMPORAL_UI_URL ??
  (temporalAddress ? `http://${temporalAddress.replace(/:(\d+)$/, (_, port) => `:${Number(port) + 1000}`)}` : '');

jest.setTimeout(90_000);

describeOnTemporal('the Temporal UI, as an operator uses it', () => {
  let app: TestApp;
  let browser: Browser;
  let client: Awaited<ReturnType<typeof connectClient>>;
  let account: { accountId: string; key: string };
  const responses: Record<'completed' | 'failed' | 'cancelled', string> = { completed: '', failed: '', cancelled: '' };

  beforeAll(async () => {
    app = await TestApp.start();
    client = await connectClient();
    account = await app.createAccount({ name: 'ui operator' });
    const create = (input: string) =>
      app.request('POST', '/v2/responses', { key: account.key, body: { model: 'dev-echo', input } });
    responses.completed = (await create('hello from the Temporal UI')).body.id;
    // The dev model fails on request (`/error`) and runs slowly enough to be cancelled (`/delay`).
    responses.failed = (await create('/error')).body.id;
    responses.cancelled = (await create('/delay 300 /words 100')).body.id;
    await app.request('POST', `/v2/responses/${responses.cancelled}/cancel`, { key: account.key });
    for (const id of Object.values(responses))
      await client.workflow.getHandle(workflowIdOf({ kind: 'response', id })).result();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await client?.close();
    await app?.close();
  });

  async function screenshot(page: Page, name: string) {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `temporal-ui-${name}.png`), fullPage: false });
  }

  const listUrl = (query: string) => `${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`;

  it('filters by account and status, opens a Response: history, search attributes, memo; nothing leaves the host', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const watch = watchPage(page);

    // A customer's jobs: all three of this account's Responses, no one else's.
    await page.goto(listUrl(`SwitchyardAccountId = "${account.accountId}"`));
    for (const id of Object.values(responses))
      await page
        .getByRole('link', { name: `response/${id}` })
        .first()
        .waitFor();
    await page.getByText('3 Workflows', { exact: true }).waitFor();
    await screenshot(page, 'by-account');

    // Narrowed to the failures: a Response that failed is a workflow that completed, so only SwitchyardStatus tells.
    await page.goto(listUrl(`SwitchyardAccountId = "${account.accountId}" AND SwitchyardStatus = "failed"`));
    await page
      .getByRole('link', { name: `response/${responses.failed}` })
      .first()
      .waitFor();
    await page
      .getByText(/^1 Workflows?$/)
      .first()
      .waitFor();
    expect(await page.getByRole('link', { name: `response/${responses.completed}` }).count()).toBe(0);
    await screenshot(page, 'failed');

    // The Response's workflow: type, task queue, result, and its history of activities.
    await page.goto(listUrl(`SwitchyardAccountId = "${account.accountId}" AND SwitchyardStatus = "completed"`));
    await page
      .getByRole('link', { name: `response/${responses.completed}` })
      .first()
      .click();
    await page.getByText('responseWorkflow').first().waitFor();
    await page.getByText('Workflow Execution Completed').first().waitFor();
    for (const activity of ['startAndCallProvider', 'finalizeResponse'])
      await page.getByText(activity).first().waitFor();
    await screenshot(page, 'history');

    // Its search attributes and memo: who and what the job is for.
    await page.getByText('Search Attributes', { exact: true }).first().click();
    await page.getByText('SwitchyardAccountId').first().waitFor();
    await page.getByText(account.accountId).first().waitFor();
    await page.getByText('SwitchyardModel').first().waitFor();
    await screenshot(page, 'search-attributes');
    await page.getByText('Memo', { exact: true }).first().click();
    await page.getByText(responses.completed).first().waitFor();
    await page.getByText('resourceId').first().waitFor();
    await screenshot(page, 'memo');

    expect(requestsElsewhere(watch, uiUrl)).toEqual([]);
    await page.close();
  });
});
