import { useTestApp } from '../support/harness';

/** What a deleted Response still means: its Idempotency-Key does not serve it again, and its content leaves history. */
describe('responses: after deletion', () => {
  const suite = useTestApp();

  const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      body: { model: 'dev-echo', background: false, ...body },
      headers,
    });

  it('answers a replayed Idempotency-Key of a deleted Response with 404 and runs nothing', async () => {
    const first = await create({ input: 'once only' }, { 'idempotency-key': 'delete-me' });
    expect(first.body.status).toBe('completed');
    expect((await suite.app.request('DELETE', `/v2/responses/${first.body.id}`, { key: suite.key })).status).toBe(200);
    const replay = await create({ input: 'once only' }, { 'idempotency-key': 'delete-me' });
    expect(replay.status).toBe(404);
    expect(replay.body.error.code).toBe('response.not_found');
    const rows = await suite.app.db
      .selectFrom('responses')
      .select('id')
      .where('account_id', '=', suite.accountId)
      .execute();
    expect(rows.map((row) => row.id)).toEqual([first.body.id]);
  });

  it('drops a deleted ancestor from previous_response_id history but keeps the chain', async () => {
    const a = await create({ input: 'alpha alpha' });
    const b = await create({ input: 'beta', previous_response_id: a.body.id });
    const withAll = await create({ input: 'gamma', previous_response_id: b.body.id });
    expect((await suite.app.request('DELETE', `/v2/responses/${a.body.id}`, { key: suite.key })).status).toBe(200);
    const withoutA = await create({ input: 'gamma', previous_response_id: b.body.id });
    // dev-echo counts one input token per word sent: "alpha alpha" in and out is 4 words.
    expect(withAll.body.usage.input_tokens - withoutA.body.usage.input_tokens).toBe(4);
    expect(withoutA.body.usage.input_tokens).toBe(3); // "beta" in and out, then "gamma"
  });
});
