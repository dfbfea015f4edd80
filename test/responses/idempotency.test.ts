import { useTestApp } from '../support/harness';
import { SseStream } from '../support/sse';
import { createResponse, debitsOf, outputText, waitForFinal } from './helpers';

/** Spec: Authentication (Idempotency-Key); DECISIONS 17. */
describe('responses: Idempotency-Key', () => {
  const suite = useTestApp();

  const jobsOf = (id: string) => suite.app.db.selectFrom('jobs').select('id').where('id', '=', id).execute();
  const responsesOf = (account: string) =>
    suite.app.db.selectFrom('responses').select('id').where('account_id', '=', account).execute();
  const debitsFor = async (account: string, responseId: string) =>
    (await debitsOf(suite.app, account)).filter(
      (debit) => (debit.metadata as Record<string, unknown>).response_id === responseId,
    );

  it('the same key and body return the stored Response, run nothing again and bill once', async () => {
    const body = { input: 'only once please', metadata: { order: '42' } };
    const first = await createResponse(suite.app, suite.key, body, { 'idempotency-key': 'op-1' });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const final = await waitForFinal(suite.app, suite.key, first.body.id);
    expect(final.status).toBe('completed');

    // Key order in the body does not make it a different request.
    const replay = await createResponse(
      suite.app,
      suite.key,
      { metadata: { order: '42' }, input: 'only once please' },
      { 'idempotency-key': 'op-1' },
    );
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(first.body.id);
    // Any status: here the stored one is already completed.
    expect(replay.body).toEqual(final);

    expect(await jobsOf(first.body.id)).toHaveLength(1);
    expect(await debitsFor(suite.accountId, first.body.id)).toHaveLength(1);
    const events = await suite.app.db
      .selectFrom('stream_events')
      .select('events')
      .where('stream_id', '=', first.body.id)
      .execute();
    const created = events
      .flatMap((row) => row.events as Array<{ type: string }>)
      .filter((event) => event.type === 'response.created');
    expect(created).toHaveLength(1);
  });

  it('the same key with a different body is 400 request.idempotency_key_reused', async () => {
    const first = await createResponse(
      suite.app,
      suite.key,
      { input: 'version one', background: false },
      { 'idempotency-key': 'op-2' },
    );
    expect(first.status).toBe(200);
    const before = await responsesOf(suite.accountId);
    for (const body of [
      { input: 'version two', background: false },
      { input: 'version one' },
      { input: 'version one', background: false, temperature: 1 },
    ]) {
      const reply = await createResponse(suite.app, suite.key, body, { 'idempotency-key': 'op-2' });
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({ error: { code: 'request.idempotency_key_reused', message: expect.any(String) } });
    }
    expect(await responsesOf(suite.accountId)).toEqual(before);
  });

  it('keys are per account: another account may use the same key', async () => {
    const mine = await createResponse(
      suite.app,
      suite.key,
      { input: 'shared key', background: false },
      { 'idempotency-key': 'op-3' },
    );
    const other = await suite.app.createAccount({ name: 'other' });
    const theirs = await createResponse(
      suite.app,
      other.key,
      { input: 'shared key', background: false },
      { 'idempotency-key': 'op-3' },
    );
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.body.status).toBe('completed');
    // Their replay finds their own Response, and mine stays invisible to them.
    const theirsAgain = await createResponse(
      suite.app,
      other.key,
      { input: 'shared key', background: false },
      { 'idempotency-key': 'op-3' },
    );
    expect(theirsAgain.body.id).toBe(theirs.body.id);
    expect((await suite.app.request('GET', `/v2/responses/${theirs.body.id}`, { key: suite.key })).status).toBe(404);
  });

  it('background: false replayed returns the final Response', async () => {
    const body = { input: '/delay 20 one two three four', background: false };
    const first = await createResponse(suite.app, suite.key, body, { 'idempotency-key': 'op-4' });
    expect(first.body.status).toBe('completed');
    const replay = await createResponse(suite.app, suite.key, body, { 'idempotency-key': 'op-4' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect(outputText(replay.body)).toBe('one two three four');
  });

  it('a streamed request replayed streams the stored events again', async () => {
    const body = { model: 'dev-echo', input: '/delay 5 /words 8', background: false, stream: true };
    const first = await (
      await SseStream.open(`${suite.app.baseUrl}/v2/responses`, {
        key: suite.key,
        body,
        headers: { 'idempotency-key': 'op-5' },
      })
    ).readAll();
    expect(first.at(-1)!.event).toBe('response.completed');
    const again = await SseStream.open(`${suite.app.baseUrl}/v2/responses`, {
      key: suite.key,
      body,
      headers: { 'idempotency-key': 'op-5' },
    });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.readAll()).toEqual(first);
    expect(await jobsOf(first[0].data.response.id)).toHaveLength(1);
  });

  it('a concurrent burst of 10 identical requests starts one Response, one job and one debit', async () => {
    const burst = await suite.app.createAccount({ name: 'burst' });
    const body = { input: 'burst of ten' };
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => createResponse(suite.app, burst.key, body, { 'idempotency-key': 'burst-key' })),
    );
    for (const reply of replies) expect(reply.status).toBe(200);
    const ids = new Set(replies.map((reply) => reply.body.id));
    expect(ids.size).toBe(1);
    const [id] = ids;
    expect(replies.filter((reply) => reply.headers.get('idempotent-replayed') === null)).toHaveLength(1);

    const final = await waitForFinal(suite.app, burst.key, id);
    expect(final.status).toBe('completed');
    expect(await responsesOf(burst.accountId)).toEqual([{ id }]);
    expect(await jobsOf(id)).toHaveLength(1);
    const keys = await suite.app.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('account_id', '=', burst.accountId)
      .execute();
    expect(keys).toHaveLength(1);
    const debits = await debitsOf(suite.app, burst.accountId);
    expect(debits).toHaveLength(1);
    expect(debits[0].metadata).toMatchObject({ response_id: id });
  });
});
