import { sql } from 'kysely';
import { useTestApp } from '../support/harness';
import { postTranscription, toneWav } from '../audio/audio-fixtures';

/**
 * Input Postgres would refuse (a NUL, an unpaired surrogate, an integer id beyond `integer`) is refused by every
 * billable route with a 400 (or, for an id that cannot exist, a 404) in the error envelope, before anything is
 * written or held: never a 500 from the database, never a hold left behind.
 */
describe('billing: input the database cannot store is refused before any write', () => {
  const suite = useTestApp({ balance: 1_000_000 });
  let assistantId: number;
  let threadId: string;
  beforeAll(async () => {
    assistantId = (
      await suite.app.request('POST', '/v2/assistants', { key: suite.key, body: { model: 'dev-echo', name: 'Echo' } })
    ).body.id;
    threadId = (await suite.app.request('POST', '/v2/threads', { key: suite.key, body: {} })).body.id;
  });

  /** What the account has written and holds: none of it may change on a refused request. */
  async function written() {
    const { rows } = await sql<Record<string, string>>`
      select
        (select held from accounts where id = ${suite.accountId}) as held,
        (select count(*) from ledger_holds where account_id = ${suite.accountId}) as holds,
        (select count(*) from ledger_transactions where account_id = ${suite.accountId}) as ledger,
        (select count(*) from threads where account_id = ${suite.accountId}) as threads,
        (select count(*) from thread_messages where thread_id = ${threadId}) as messages,
        (select count(*) from runs where account_id = ${suite.accountId}) as runs,
        (select count(*) from responses where account_id = ${suite.accountId}) as responses,
        (select count(*) from transcriptions where account_id = ${suite.accountId}) as transcriptions,
        (select count(*) from idempotency_keys where account_id = ${suite.accountId}) as replies`.execute(suite.app.db);
    return Object.fromEntries(Object.entries(rows[0]!).map(([name, value]) => [name, Number(value)]));
  }

  function expectRefused(reply: { status: number; body: any }, status: number, area: string) {
    expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({
      status,
      code: `${area}.${status === 404 ? 'not_found' : 'invalid_request'}`,
    });
    expect(typeof reply.body.error.message).toBe('string');
  }

  const nul = 'before\u0000after';
  const lone = 'half \ud800 a pair';
  const routes = (text: string) => [
    {
      area: 'run',
      path: '/v2/threads/runs',
      body: () => ({ assistant_id: assistantId, thread: { messages: [{ role: 'user', content: text }] } }),
    },
    { area: 'run', path: '/v2/threads/runs', body: () => ({ assistant_id: assistantId, metadata: { note: text } }) },
    {
      area: 'run',
      path: () => `/v2/threads/${threadId}/runs`,
      body: () => ({
        assistant_id: assistantId,
        additional_messages: [
          { role: 'user', content: 'hi' },
          { role: 'user', content: text },
        ],
      }),
    },
    {
      area: 'run',
      path: () => `/v2/threads/${threadId}/runs`,
      body: () => ({ assistant_id: assistantId, instructions: text }),
    },
    { area: 'response', path: '/v2/responses', body: () => ({ model: 'dev-echo', input: text }) },
    {
      area: 'response',
      path: '/v2/responses',
      body: () => ({
        model: 'dev-echo',
        input: 'hi',
        tools: [{ type: 'function', name: 'f', parameters: { type: 'object', [text]: 1 } }],
      }),
    },
    {
      area: 'response',
      path: '/openai/v1/responses',
      body: () => ({ model: 'dev-echo', input: [{ role: 'user', content: text }] }),
    },
    {
      area: 'chat',
      path: '/v2/chat/completions',
      body: () => ({ model: 'dev-echo', messages: [{ role: 'user', content: text }] }),
    },
    {
      area: 'chat',
      path: '/v1/chat/completions',
      body: () => ({ model: 'dev-echo', messages: [{ role: 'user', content: text }] }),
    },
    {
      area: 'chat',
      path: '/openai/v1/chat/completions',
      body: () => ({ model: 'dev-echo', messages: [{ role: 'user', content: text }], stream: true }),
    },
    { area: 'embedding', path: '/v2/embeddings', body: () => ({ model: 'dev-embed', input: text }) },
    { area: 'embedding', path: '/openai/v1/embeddings', body: () => ({ model: 'dev-embed', input: ['fine', text] }) },
    { area: 'audio', path: '/v2/audio/speech', body: () => ({ model: 'dev-tts', voice: 'en-us', text }) },
  ];

  for (const [what, text] of [
    ['a NUL', nul],
    ['an unpaired surrogate', lone],
  ] as const) {
    it(`${what} in any field of a billable JSON body is a 400 and writes nothing, with and without an Idempotency-Key`, async () => {
      const before = await written();
      for (const route of routes(text)) {
        for (const headers of [{}, { 'Idempotency-Key': `refused-${Math.random()}` }] as Array<
          Record<string, string>
        >) {
          const path = typeof route.path === 'string' ? route.path : route.path();
          const reply = await suite.app.request('POST', path, { key: suite.key, body: route.body(), headers });
          expectRefused(reply, 400, route.area);
        }
      }
      expect(await written()).toEqual(before);
    });
  }

  it('a NUL in the path of a billable route is refused, not looked up', async () => {
    const before = await written();
    const reply = await suite.app.request('POST', `/v2/threads/${threadId}%00/runs`, {
      key: suite.key,
      body: { assistant_id: assistantId },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toMatch(/\.invalid_request$/);
    expect(await written()).toEqual(before);
  });

  it('a NUL in any field of a transcription form is a 400 and writes nothing, synchronous or not', async () => {
    const wav = toneWav(0.5, [[0, 0.25]]);
    const before = await written();
    for (const model of ['dev-stt', 'dev-stt-async']) {
      const fields = model === 'dev-stt' ? ['prompt', 'language'] : ['prompt', 'language', 'source', 'meta'];
      for (const field of fields) {
        const value = field === 'meta' ? JSON.stringify({ note: nul }) : nul;
        const reply = await postTranscription(
          suite.app.baseUrl,
          suite.key,
          { bytes: wav, name: 'tone.wav' },
          { model, [field]: value },
        );
        expectRefused(reply, 400, 'transcription');
      }
    }
    expect(await written()).toEqual(before);
  });

  it('an assistant id beyond the integer column is a 400 in a body, a 404 in a path, never a 500', async () => {
    const before = await written();
    for (const id of [2147483648, 2 ** 53 - 1, 99999999999999999999]) {
      expectRefused(
        await suite.app.request('POST', '/v2/threads/runs', { key: suite.key, body: { assistant_id: id } }),
        400,
        'run',
      );
      expectRefused(
        await suite.app.request('POST', `/v2/threads/${threadId}/runs`, { key: suite.key, body: { assistant_id: id } }),
        400,
        'run',
      );
      for (const path of ['/v2/responses', '/openai/v1/responses']) {
        const reply = await suite.app.request('POST', path, {
          key: suite.key,
          body: { assistant_id: id, input: 'hi' },
        });
        expect(reply.status === 400 || reply.status === 404).toBe(true);
        expect(reply.body.error.code).toMatch(/^(response|assistant)\.(invalid_request|not_found)$/);
      }
      const raw = String(BigInt(id));
      for (const method of ['GET', 'DELETE'])
        expectRefused(await suite.app.request(method, `/v2/assistants/${raw}`, { key: suite.key }), 404, 'assistant');
      expectRefused(
        await suite.app.request('POST', `/v2/assistants/${raw}`, {
          key: suite.key,
          body: { model: 'dev-echo', name: 'x' },
        }),
        404,
        'assistant',
      );
      expectRefused(
        await suite.app.request('GET', `/v2/assistants?after=${raw}`, { key: suite.key }),
        400,
        'assistant',
      );
      expectRefused(
        await suite.app.request('GET', `/v2/assistants?before=${raw}`, { key: suite.key }),
        400,
        'assistant',
      );
    }
    expect(await written()).toEqual(before);
  });
});
