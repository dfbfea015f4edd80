import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CONSOLE_DIST } from '../../src/console/console.routes';
import { useTestApp } from '../support/harness';

/** How /console is served: the page under a strict policy and never cached, hashed assets cached for a year. */
describe('GET /console', () => {
  beforeAll(() => {
    execFileSync(
      process.execPath,
      [path.join(__dirname, '..', '..', 'scripts', 'build-if-stale.js'), '--only', 'console'],
      { stdio: 'inherit' },
    );
  }, 240_000);
  const suite = useTestApp();

  it('serves the page with a Content-Security-Policy of this origin only, no caching, no framing', async () => {
    const reply = await fetch(`${suite.app.baseUrl}/console`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('text/html');
    expect(reply.headers.get('cache-control')).toBe('no-cache');
    const policy = reply.headers.get('content-security-policy')!;
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(reply.headers.get('x-frame-options')).toBe('DENY');
    const html = await reply.text();
    expect(html).toMatch(/<script type="module" crossorigin src="\/console\/assets\/index-[\w-]+\.js"><\/script>/);
    // No inline script: every <script> has a src.
    expect(html.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull();
  });

  it('answers every page path with the page (a reload of /console/responses/… works)', async () => {
    for (const pagePath of ['/console/', '/console/usage', '/console/responses/resp_123']) {
      const reply = await fetch(`${suite.app.baseUrl}${pagePath}`);
      expect(reply.status).toBe(200);
      expect(await reply.text()).toContain('<div id="root"></div>');
    }
  });

  it('serves the built assets with a year of caching, and 404 in the envelope for anything else', async () => {
    const assets = fs.readdirSync(path.join(CONSOLE_DIST, 'assets'));
    const script = assets.find((name) => name.endsWith('.js'))!;
    const reply = await fetch(`${suite.app.baseUrl}/console/assets/${script}`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('text/javascript');
    expect(reply.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    await reply.arrayBuffer();
    for (const missing of [
      '/console/assets/nope.js',
      '/console/assets/..%2F..%2Fpackage.json',
      '/console/assets/.build-stamp',
      '/console/assets/index.html',
    ]) {
      const refused = await fetch(`${suite.app.baseUrl}${missing}`);
      expect(refused.status).toBe(404);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toMatch(/not_found/);
    }
  });
});
