import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium, requestsElsewhere, watchPage } from '../support/browser';
import { TestApp } from '../support/harness';

describe('GET /docs in a real browser', () => {
  let app: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    app = await TestApp.start();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('renders the Responses section from /openapi.json, with no console error and no request leaving the host', async () => {
    const page = await browser.newPage();
    const watch = watchPage(page);

    const reply = await page.goto(`${app.baseUrl}/docs`, { waitUntil: 'networkidle' });
    expect(reply!.headers()['content-security-policy']).toContain("script-src 'self'");
    const responsesTag = page.locator('#operations-tag-Responses');
    await responsesTag.waitFor({ state: 'visible', timeout: 20_000 });
    expect(
      await page.locator('.opblock-summary-path', { hasText: '/v2/responses/{id}/cancel' }).count(),
    ).toBeGreaterThan(0);
    await page.locator('.opblock-summary', { hasText: 'Create a Response' }).first().click();
    await page.locator('.opblock-body').first().waitFor({ state: 'visible' });

    const screenshots = path.join(__dirname, '..', '..', 'docs', 'screenshots');
    fs.mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: path.join(screenshots, 'api-reference.png'), fullPage: false });

    expect(requestsElsewhere(watch, new URL(app.baseUrl).origin)).toEqual([]);
    expect(watch.problems).toEqual([]);
    await page.close();
  });

  it('the reference works at phone width too', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(`${app.baseUrl}/docs`, { waitUntil: 'networkidle' });
    await page.locator('#operations-tag-Responses').waitFor({ state: 'visible', timeout: 20_000 });
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    expect(width).toBeLessThanOrEqual(390 + 1);
    await page.close();
  });
});
