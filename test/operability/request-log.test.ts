import { execFile } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pino from 'pino';
import { TestApp } from '../support/harness';

/** One log line per request at info (docs/operations.md, "Logs"); the request id returned and accepted; LOG_FORMAT=pretty. */
describe('request logs', () => {
  const lines: any[] = [];
  let app: TestApp;
  let account: { key: string; accountId: string };
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    app = await TestApp.start({ logger: pino({ level: 'info' }, sink) });
    account = await app.createAccount();
  });
  afterAll(() => app?.close());
  const requestLines = () => lines.filter((line) => line.msg === 'request');

  it('one line per request: method, route template, status, duration, account, request id, Response id; no key, no body', async () => {
    lines.length = 0;
    const created = await app.request('POST', '/v2/responses', {
      key: account.key,
      body: { model: 'dev-echo', input: 'a secret prompt', background: false },
    });
    const fetched = await app.request('GET', `/v2/responses/${created.body.id}`, { key: account.key });
    const refused = await app.request('GET', '/v2/responses/resp_nope', { key: 'not-a-key' });
    const logged = requestLines();
    expect(logged).toEqual([
      expect.objectContaining({
        level: 30,
        method: 'POST',
        route: '/v2/responses',
        status: 200,
        accountId: account.accountId,
        responseId: created.body.id,
        requestId: created.headers.get('x-request-id'),
        ms: expect.any(Number),
      }),
      expect.objectContaining({
        method: 'GET',
        route: '/v2/responses/:id',
        status: 200,
        responseId: created.body.id,
        requestId: fetched.headers.get('x-request-id'),
      }),
      expect.objectContaining({ method: 'GET', status: 401, requestId: refused.headers.get('x-request-id') }),
    ]);
    expect(logged[2].accountId).toBeUndefined();
    const text = JSON.stringify(lines);
    expect(text).not.toContain(account.key);
    expect(text).not.toContain('a secret prompt');
  });

  it('a well-formed X-Request-Id is kept and returned; a malformed one is replaced', async () => {
    const kept = await app.request('GET', '/v2/models', {
      key: account.key,
      headers: { 'x-request-id': 'trace-42.abc_DEF' },
    });
    expect(kept.headers.get('x-request-id')).toBe('trace-42.abc_DEF');
    const replaced = await app.request('GET', '/v2/models', {
      key: account.key,
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    expect(requestLines().at(-2)).toMatchObject({ requestId: 'trace-42.abc_DEF', route: '/v2/models' });
  });

  it('LOG_FORMAT=pretty writes lines for people, not JSON', async () => {
    const script = `const { createLogger } = require(${JSON.stringify(path.join(__dirname, '../../src/logger.ts'))}); createLogger('info', 'pretty').info({ route: '/v2/models' }, 'request');`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', '@swc-node/register', '-e', script], {
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(stdout).toMatch(/INFO.*request/);
    expect(stdout).toContain('route: "/v2/models"');
    expect(() => JSON.parse(stdout)).toThrow();
  });
});
