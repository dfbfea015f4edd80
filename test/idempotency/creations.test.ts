import { useTestApp } from '../support/harness';
import { debits as debitsFor, settle, toneWav } from '../audio/audio-fixtures';
import { pollUntil } from '../responses/helpers';

/**
 * Idempotency-Key on the creations that start durable work besides Responses (docs/api-decisions.md 17): Runs and
 * transcriptions, with the contract every endpoint shares. A repeat with the same key and body creates nothing and
 * answers what the first request created, as it stands now (`Idempotent-Replayed: true`); another body is 400.
 */
describe('Idempotency-Key on Runs and transcriptions', () => {
  const suite = useTestApp();
  const post = (path: string, body: unknown, key?: string) =>
    suite.app.request('POST', path, { key: suite.key, body, headers: key ? { 'idempotency-key': key } : {} });
  let assistantId: number;
  beforeAll(async () => {
    assistantId = (await post('/v2/assistants', { model: 'dev-echo', name: 'Echo' })).body.id;
  });
  const countRuns = async () =>
    Number(
      (
        await suite.app.db
          .selectFrom('runs')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('account_id', '=', suite.accountId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const runEnd = (threadId: string, runId: string) =>
    pollUntil(
      async () => (await suite.app.request('GET', `/v2/threads/${threadId}/runs/${runId}`, { key: suite.key })).body,
      (run) => !['queued', 'in_progress'].includes(run.status),
    );

  it('POST /v2/threads/{id}/runs: a repeat answers the same Run as it stands now; another body is 400', async () => {
    const threadId = (await post('/v2/threads', { messages: [{ role: 'user', content: 'once' }] })).body.id;
    const before = await countRuns();
    const first = await post(`/v2/threads/${threadId}/runs`, { assistant_id: assistantId }, 'run-once');
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const ended = await runEnd(threadId, first.body.id);
    expect(ended.status).toBe('completed');

    const again = await post(`/v2/threads/${threadId}/runs`, { assistant_id: assistantId }, 'run-once');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toMatchObject({ id: first.body.id, status: 'completed' });
    expect(await countRuns()).toBe(before + 1);
    // One assistant message: the repeat ran nothing.
    const messages = (await suite.app.request('GET', `/v2/threads/${threadId}/messages`, { key: suite.key })).body.data;
    expect(messages.filter((message: { role: string }) => message.role === 'assistant')).toHaveLength(1);

    const other = await post(
      `/v2/threads/${threadId}/runs`,
      { assistant_id: assistantId, metadata: { x: 'y' } },
      'run-once',
    );
    expect([other.status, other.body.error.code]).toEqual([400, 'request.idempotency_key_reused']);
    // The same body on another thread is another request.
    const otherThread = (await post('/v2/threads', {})).body.id;
    const elsewhere = await post(`/v2/threads/${otherThread}/runs`, { assistant_id: assistantId }, 'run-once');
    expect([elsewhere.status, elsewhere.body.error?.code]).toEqual([400, 'request.idempotency_key_reused']);
    expect(await countRuns()).toBe(before + 1);
  });

  it('POST /v2/threads/runs: concurrent repeats create one thread and one Run, billed once', async () => {
    const body = { assistant_id: assistantId, thread: { messages: [{ role: 'user', content: 'all at once' }] } };
    const before = await countRuns();
    const replies = await Promise.all(Array.from({ length: 6 }, () => post('/v2/threads/runs', body, 'thread-run')));
    // Each is the one Run, or a 409 for a repeat that arrived while the first was still being written.
    const answered = replies.filter((reply) => reply.status === 200);
    expect(replies.filter((reply) => reply.status !== 200).map((reply) => reply.status)).toEqual(
      replies.filter((reply) => reply.status !== 200).map(() => 409),
    );
    expect(new Set(answered.map((reply) => reply.body.id)).size).toBe(1);
    expect(await countRuns()).toBe(before + 1);
    const run = answered[0]!.body;
    await runEnd(run.thread_id, run.id);
    const replay = await post('/v2/threads/runs', body, 'thread-run');
    expect(replay.body).toMatchObject({ id: run.id, thread_id: run.thread_id, status: 'completed' });
    const billed = await suite.app.db
      .selectFrom('ledger_transactions')
      .select('id')
      .where('account_id', '=', suite.accountId)
      .where('type', '=', 'debit')
      .where(({ ref }) => ref('metadata', '->>').key('run_id'), '=', run.id)
      .execute();
    expect(billed).toHaveLength(1);
  });

  const transcribe = async (fileBytes: Buffer, fields: Record<string, string>, key?: string) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('file', new Blob([fileBytes]), 'clip.wav');
    const reply = await fetch(`${suite.app.baseUrl}/v2/audio/transcription`, {
      method: 'POST',
      headers: { 'x-auth-token': suite.key, ...(key ? { 'idempotency-key': key } : {}) },
      body: form,
    });
    return { status: reply.status, headers: reply.headers, body: (await reply.json()) as any };
  };

  it('an asynchronous transcription: a repeat answers the same request id and its status; another file is 400', async () => {
    const clip = toneWav(1.5, [[0.2, 1.2]]);
    const before = (await debitsFor(suite, 'transcription')).length;
    const first = await transcribe(clip, { model: 'dev-stt-async' }, 'stt-once');
    expect([first.status, first.body.status]).toEqual([200, 'queued']);
    expect(await settle(suite, first.body.request_id)).toBe('completed');
    const again = await transcribe(clip, { model: 'dev-stt-async' }, 'stt-once');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual({ request_id: first.body.request_id, status: 'completed' });
    expect((await debitsFor(suite, 'transcription')).length).toBe(before + 1);
    // The key binds the file's bytes, not only the form's fields.
    const otherFile = await transcribe(toneWav(1.5, [[0.1, 0.9]]), { model: 'dev-stt-async' }, 'stt-once');
    expect([otherFile.status, otherFile.body.error.code]).toEqual([400, 'request.idempotency_key_reused']);
    const otherFields = await transcribe(clip, { model: 'dev-stt-async', language: 'en' }, 'stt-once');
    expect([otherFields.status, otherFields.body.error.code]).toEqual([400, 'request.idempotency_key_reused']);
    expect(
      await suite.app.db
        .selectFrom('transcriptions')
        .select('id')
        .where('account_id', '=', suite.accountId)
        .where('id', '!=', first.body.request_id)
        .execute(),
    ).toEqual([]);
  });

  it('a synchronous transcription: a repeat answers the stored transcript and bills once', async () => {
    const clip = toneWav(1, [[0.1, 0.8]]);
    const before = (await debitsFor(suite, 'transcription')).length;
    const first = await transcribe(clip, { model: 'dev-stt' }, 'stt-sync');
    expect(first.status).toBe(200);
    const again = await transcribe(clip, { model: 'dev-stt' }, 'stt-sync');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await debitsFor(suite, 'transcription')).length).toBe(before + 1);
  });
});
