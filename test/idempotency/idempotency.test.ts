import { useTestApp } from '../support/harness';

/**
 * Idempotency-Key on the synchronous billable calls (chat completions v2 and v1, embeddings, speech), with the contract
 * of Responses (api-decisions 17): same key and body → the stored reply, nothing run or billed again; another body
 * → 400; a call still running → 409; a failed call stores no reply and runs again under its request id; a call abandoned by a crash runs again under
 * its request id, so its debit is not repeated.
 */
describe('Idempotency-Key on chat completions, embeddings and speech', () => {
  const suite = useTestApp();
  const post = (path: string, body: unknown, key?: string) =>
    suite.app.request('POST', path, { key: suite.key, body, headers: key ? { 'idempotency-key': key } : {} });
  const debits = () =>
    suite.app.db
      .selectFrom('ledger_transactions')
      .select(['operation_key', 'amount'])
      .where('account_id', '=', suite.accountId)
      .where('type', '=', 'debit')
      .execute();

  const calls = [
    {
      path: '/v2/chat/completions',
      body: { model: 'dev-echo', messages: [{ role: 'user', content: 'once' }] },
      other: { model: 'dev-echo', messages: [{ role: 'user', content: 'twice' }] },
    },
    {
      path: '/v1/chat/completions',
      body: { model: 'dev-echo', messages: [{ role: 'user', content: 'once v1' }] },
      other: { model: 'dev-echo', messages: [{ role: 'user', content: 'v1 again' }] },
    },
    {
      path: '/v2/embeddings',
      body: { model: 'dev-embed', input: 'embed once' },
      other: { model: 'dev-embed', input: 'embed twice' },
    },
  ];

  it.each(calls)(
    '$path: a repeat answers the stored reply and bills once; another body is 400',
    async ({ path, body, other }) => {
      const key = `key-${path}`;
      const before = (await debits()).length;
      const first = await post(path, body, key);
      expect(first.status).toBe(200);
      const second = await post(path, { ...body }, key);
      expect(second.status).toBe(200);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(second.body).toEqual(first.body);
      expect((await debits()).length).toBe(before + 1);
      const reused = await post(path, other, key);
      expect([reused.status, reused.body.error.code]).toEqual([400, 'request.idempotency_key_reused']);
      // Without a key, every call runs and bills.
      await post(path, body);
      expect((await debits()).length).toBe(before + 2);
    },
  );

  it('/v2/audio/speech: a repeat answers the same MP3 bytes (stored with the key) and bills once', async () => {
    const speak = (body: unknown, key?: string) =>
      fetch(`${suite.app.baseUrl}/v2/audio/speech`, {
        method: 'POST',
        headers: {
          'x-auth-token': suite.key,
          'content-type': 'application/json',
          ...(key ? { 'idempotency-key': key } : {}),
        },
        body: JSON.stringify(body),
      });
    const body = { model: 'dev-tts', voice: 'en-us', text: 'Said once, heard twice.' };
    const before = (await debits()).length;
    const first = await speak(body, 'speech-key');
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('audio/mpeg');
    const audio = Buffer.from(await first.arrayBuffer());
    expect(audio.length).toBeGreaterThan(1000);
    const second = await speak({ ...body }, 'speech-key');
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('x-request-id')).toBe(first.headers.get('x-request-id'));
    expect(Buffer.from(await second.arrayBuffer()).equals(audio)).toBe(true);
    expect((await debits()).length).toBe(before + 1);
    const reused = await speak({ ...body, text: 'Something else.' }, 'speech-key');
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as { error: { code: string } }).error.code).toBe('request.idempotency_key_reused');
  });

  it('answers 409 while a call with the key is still running, and stores no reply for a failed call', async () => {
    const body = { model: 'dev-echo', messages: [{ role: 'user', content: 'in flight' }] };
    const first = await post('/v2/chat/completions', body, 'in-flight');
    expect(first.status).toBe(200);
    await suite.app.db
      .updateTable('idempotency_keys')
      .set({ status: 'running' })
      .where('key', '=', 'in-flight')
      .execute();
    const busy = await post('/v2/chat/completions', body, 'in-flight');
    expect([busy.status, busy.body.error.code]).toEqual([409, 'request.conflict']);

    const failing = { model: 'dev-echo', messages: [{ role: 'user', content: '/error' }] };
    const failed = await post('/v2/chat/completions', failing, 'fails');
    expect(failed.status).toBeGreaterThanOrEqual(400);
    const [left] = await suite.app.db
      .selectFrom('idempotency_keys')
      .select(['status', 'reply', 'request_id'])
      .where('key', '=', 'fails')
      .execute();
    expect(left).toMatchObject({ status: 'failed', reply: null });
    // Retried with its key, it runs again (and fails again), under the same request id.
    expect((await post('/v2/chat/completions', failing, 'fails')).status).toBe(failed.status);
    const [again] = await suite.app.db
      .selectFrom('idempotency_keys')
      .select(['status', 'request_id'])
      .where('key', '=', 'fails')
      .execute();
    expect(again).toEqual({ status: 'failed', request_id: left.request_id });
  });

  it('runs a call abandoned by a crash again under its request id: billed once', async () => {
    const body = { model: 'dev-echo', messages: [{ role: 'user', content: 'crashed after billing' }] };
    // What a process that died after billing, before storing the reply, leaves behind.
    const claimed = await post('/v2/chat/completions', body, 'crashed');
    const [row] = await suite.app.db
      .selectFrom('idempotency_keys')
      .select('request_id')
      .where('key', '=', 'crashed')
      .execute();
    expect((await debits()).filter((debit) => debit.operation_key === `chat:${row.request_id}`)).toHaveLength(1);
    await suite.app.db
      .updateTable('idempotency_keys')
      .set({ status: 'running', reply: JSON.stringify(null), created_at: new Date(Date.now() - 12 * 60_000) })
      .where('key', '=', 'crashed')
      .execute();
    const retried = await post('/v2/chat/completions', body, 'crashed');
    expect(retried.status).toBe(200);
    expect(retried.body.message).toEqual(claimed.body.message);
    expect((await debits()).filter((debit) => debit.operation_key === `chat:${row.request_id}`)).toHaveLength(1);
    const [after] = await suite.app.db
      .selectFrom('idempotency_keys')
      .select(['request_id', 'status'])
      .where('key', '=', 'crashed')
      .execute();
    expect(after).toEqual({ request_id: row.request_id, status: 'completed' });
  });

  it('refuses an over-long key with 400', async () => {
    const reply = await post('/v2/embeddings', { model: 'dev-embed', input: 'x' }, 'k'.repeat(256));
    expect([reply.status, reply.body.error.code]).toEqual([400, 'request.invalid_request']);
  });
});
