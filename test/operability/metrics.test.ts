import OpenAI from 'openai';
import { ADMIN_TOKEN, TestApp } from '../support/harness';
import { pollUntil } from '../responses/helpers';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/** The value of one sample of a scrape (0 when absent): `name{labels}` with the labels in any order. */
function sample(scrape: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of scrape.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([^{\s]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((pair) => [pair[1], pair[2]]),
    );
    if (Object.entries(labels).every(([key, value]) => have[key] === value)) return Number(match[3]);
  }
  return 0;
}

describe('GET /metrics', () => {
  let app: TestApp;
  let account: { key: string; accountId: string };
  beforeAll(async () => {
    app = await TestApp.start({ env: { METRICS_TOKEN } });
    account = await app.createAccount();
  });
  afterAll(() => app?.close());

  const scrape = async (token = ADMIN_TOKEN) => {
    const reply = await fetch(`${app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return reply.text();
  };

  it('answers the admin token or METRICS_TOKEN only', async () => {
    expect((await fetch(`${app.baseUrl}/metrics`)).status).toBe(401);
    expect(
      (await fetch(`${app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${account.key}` } })).status,
    ).toBe(401);
    expect((await fetch(`${app.baseUrl}/metrics`, { headers: { 'x-auth-token': account.key } })).status).toBe(401);
    await scrape(METRICS_TOKEN);
  });

  it('counts requests by route template, jobs by model and vendor, vendor calls, billing, group commits, the queue; no ids in labels', async () => {
    const response = (
      await app.request('POST', '/v2/responses', {
        key: account.key,
        body: { model: 'dev-echo', input: 'count me', background: false },
      })
    ).body;
    expect((await app.request('GET', `/v2/responses/${response.id}`, { key: account.key })).status).toBe(200);
    expect((await app.request('GET', '/v2/no/such/route', { key: account.key })).status).toBe(404);
    expect(
      (
        await app.request('POST', '/v2/responses', {
          key: account.key,
          body: { model: 'dev-echo', input: '/error server', background: false },
        })
      ).body.status,
    ).toBe('failed');
    const openai = new OpenAI({ apiKey: account.key, baseURL: `${app.baseUrl}/openai/v1`, maxRetries: 0 });
    for await (const chunk of await openai.chat.completions.create({
      model: 'dev-echo',
      messages: [{ role: 'user', content: 'a streamed chat' }],
      stream: true,
    }))
      void chunk;

    const text = await scrape();
    const http = 'switchyard_http_request_duration_seconds_count';
    expect(sample(text, http, { method: 'POST', route: '/v2/responses', status: '200' })).toBe(2);
    expect(sample(text, http, { method: 'GET', route: '/v2/responses/:id', status: '200' })).toBe(1);
    expect(sample(text, http, { route: 'unmatched', status: '404' })).toBe(1);
    expect(sample(text, http, { method: 'POST', route: '/openai/v1/chat/completions', status: '200' })).toBe(1);
    expect(sample(text, 'switchyard_jobs_started_total', { kind: 'response', model: 'dev-echo', vendor: 'dev' })).toBe(
      2,
    );
    expect(
      sample(text, 'switchyard_jobs_finished_total', {
        kind: 'response',
        status: 'completed',
        model: 'dev-echo',
        vendor: 'dev',
      }),
    ).toBe(1);
    expect(
      sample(text, 'switchyard_jobs_finished_total', {
        kind: 'response',
        status: 'failed',
        model: 'dev-echo',
        vendor: 'dev',
      }),
    ).toBe(1);
    expect(
      sample(text, 'switchyard_vendor_call_duration_seconds_count', { vendor: 'dev', kind: 'language', outcome: 'ok' }),
    ).toBe(2);
    expect(sample(text, 'switchyard_vendor_errors_total', { vendor: 'dev', kind: 'language', error: 'server' })).toBe(
      1,
    );
    // Only the chat was streamed from the vendor (a synchronous Response is one whole call).
    expect(sample(text, 'switchyard_vendor_time_to_first_token_seconds_count', { vendor: 'dev' })).toBe(1);
    expect(sample(text, 'switchyard_billed_kopecks_total', { model: 'dev-echo', service: 'chat' })).toBeGreaterThan(0);
    expect(sample(text, 'switchyard_billed_tokens_total', { model: 'dev-echo', direction: 'output' })).toBe(2 + 3);
    expect(sample(text, 'switchyard_group_commit_batch_size_count', { writer: 'ledger_debits' })).toBe(1); // the chat's
    expect(sample(text, 'switchyard_group_commit_batch_size_count', { writer: 'response_finalizations' })).toBe(2);
    expect(sample(text, 'switchyard_engine_oldest_pending_seconds')).toBe(0);
    expect(sample(text, 'switchyard_sse_open_streams')).toBe(0);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(text).not.toMatch(/resp_|acct_|key_|req_/);
  });

  it('shows an open stream and its running job while the stream lasts', async () => {
    const controller = new AbortController();
    const stream = await fetch(`${app.baseUrl}/v2/responses`, {
      method: 'POST',
      headers: { 'x-auth-token': account.key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'dev-echo', input: '/delay 100 /words 100', background: false, stream: true }),
      signal: controller.signal,
    });
    const reader = stream.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value); // the stream is open once its first bytes arrived
    const responseId = /"id":"(resp_\w+)"/.exec(first)![1]!;
    const running = (text: string) => sample(text, 'switchyard_engine_jobs', { kind: 'response', state: 'running' });
    // Under Temporal the engine's sweep (every 5 s) ends the rows of the earlier test's jobs, whose workflows ended.
    const during =
      app.engine === 'temporal' ? await pollUntil(scrape, (text) => running(text) === 1, 15_000) : await scrape();
    expect(sample(during, 'switchyard_sse_open_streams')).toBe(1);
    expect(running(during)).toBe(1);
    controller.abort();
    await reader.closed.catch(() => undefined);
    // The generation goes on without its client: cancel it, so the app closes with nothing running.
    expect((await app.request('POST', `/v2/responses/${responseId}/cancel`, { key: account.key })).body.status).toBe(
      'cancelled',
    );
  });
});
