import { TestApp } from '../support/harness';
import { postTranscription, toneWav } from '../audio/audio-fixtures';

/**
 * Concurrent creations of every billable kind on one account: each places a hold on the same account row, most
 * of them in a transaction that also writes the resource. None may answer 500 (a deadlock or a serialization
 * failure is retried inside the service), and once everything has ended nothing stays held and the ledger adds up.
 */
const CONCURRENCY = Number(process.env.CONCURRENT_CREATIONS ?? 50);
jest.setTimeout(120_000);

describe(`billing: ${CONCURRENCY} concurrent creations of each billable kind on one account`, () => {
  let app: TestApp;
  let key: string;
  let accountId: string;
  let assistantId: number;
  beforeAll(async () => {
    app = await TestApp.start();
    ({ key, accountId } = await app.createAccount({ balance: 100_000_000 }));
    assistantId = (await app.request('POST', '/v2/assistants', { key, body: { model: 'dev-echo', name: 'Echo' } })).body
      .id;
  });
  afterAll(async () => {
    await app.close();
  });

  const burst = <T>(make: (index: number) => Promise<T>) =>
    Promise.all(Array.from({ length: CONCURRENCY }, (_, index) => make(index)));
  const post = (path: string, body: unknown, headers?: Record<string, string>) =>
    app.request('POST', path, { key, body, headers });

  /** Every reply succeeded; the failures are counted by status and error code. */
  function expectAllOk(replies: Array<{ status: number; body: any }>) {
    const failures: Record<string, number> = {};
    for (const reply of replies.filter((reply) => reply.status !== 200)) {
      const what = `${reply.status} ${reply.body?.error?.code ?? String(reply.body).slice(0, 120)}`;
      failures[what] = (failures[what] ?? 0) + 1;
    }
    expect(failures).toEqual({});
  }

  /** Waits until the account holds nothing (the jobs of the burst have settled), then checks the ledger is exact. */
  async function expectSettled() {
    const deadline = Date.now() + 60_000;
    let account = await readAccount();
    while (account.held !== 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      account = await readAccount();
    }
    const rows = await app.db
      .selectFrom('ledger_transactions')
      .select(['type', 'amount', 'operation_key'])
      .where('account_id', '=', accountId)
      .execute();
    const holds = await app.db
      .selectFrom('ledger_holds')
      .select('amount')
      .where('account_id', '=', accountId)
      .execute();
    const credits = rows.filter((row) => row.type === 'credit').reduce((sum, row) => sum + row.amount, 0);
    const debits = rows.filter((row) => row.type === 'debit');
    expect(account.held).toBe(0);
    expect(holds).toEqual([]);
    expect(account.balance).toBe(credits - debits.reduce((sum, row) => sum + row.amount, 0));
    expect(new Set(debits.map((row) => row.operation_key)).size).toBe(debits.length);
  }
  const readAccount = () =>
    app.db.selectFrom('accounts').select(['balance', 'held']).where('id', '=', accountId).executeTakeFirstOrThrow();

  /** One billable kind: `make(index)` sends the index-th request of a burst (`prepare` runs before the burst). */
  interface Kind {
    name: string;
    /** At most this many in the burst of every kind at once. */
    mixedShare?: number;
    prepare?: () => Promise<(index: number) => Promise<{ status: number; body: any }>>;
    make?: (index: number) => Promise<{ status: number; body: any }>;
  }
  const messages = [{ role: 'user', content: '/words 3' }];
  const wav = toneWav(0.5, [[0, 0.25]]);
  const KINDS: Kind[] = [
    {
      name: 'Runs on new threads (POST /v2/threads/runs)',
      make: () => post('/v2/threads/runs', { assistant_id: assistantId, thread: { messages } }),
    },
    {
      name: 'Runs on existing threads, with additional messages',
      prepare: async () => {
        const threads = await burst(
          async () => (await post('/v2/threads', { messages: [{ role: 'user', content: 'hello' }] })).body.id as string,
        );
        return (index) =>
          post(`/v2/threads/${threads[index]}/runs`, { assistant_id: assistantId, additional_messages: messages });
      },
    },
    {
      name: 'Responses: background, synchronous, and with an Idempotency-Key',
      make: (index) => {
        const body = { model: 'dev-echo', input: '/words 3', max_output_tokens: 10, background: index % 3 !== 1 };
        return index % 3 === 2
          ? post('/v2/responses', body, { 'Idempotency-Key': `burst-${Math.random()}` })
          : post('/v2/responses', body);
      },
    },
    {
      name: 'Responses in one conversation and chained on one Response',
      prepare: async () => {
        const conversation = (await post('/v2/conversations', {})).body.id as string;
        const first = (await post('/v2/responses', { model: 'dev-echo', input: 'start', background: false })).body
          .id as string;
        return (index) =>
          post(
            '/v2/responses',
            index % 2
              ? { model: 'dev-echo', input: '/words 2', conversation }
              : { model: 'dev-echo', input: '/words 2', previous_response_id: first },
          );
      },
    },
    {
      name: 'chat completions: v2 (with and without an Idempotency-Key), v1, OpenAI-compatible streamed',
      make: async (index) => {
        if (index % 4 === 0) return post('/v2/chat/completions', { model: 'dev-echo', messages });
        if (index % 4 === 1)
          return post(
            '/v2/chat/completions',
            { model: 'dev-echo', messages },
            { 'Idempotency-Key': `chat-${Math.random()}` },
          );
        if (index % 4 === 2) return post('/v1/chat/completions', { model: 'dev-echo', messages });
        const reply = await fetch(`${app.baseUrl}/openai/v1/chat/completions`, {
          method: 'POST',
          headers: { 'x-auth-token': key, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'dev-echo', messages, stream: true }),
        });
        return { status: reply.status, body: await reply.text() };
      },
    },
    {
      name: 'embeddings',
      make: (index) =>
        post(index % 2 ? '/v2/embeddings' : '/openai/v1/embeddings', {
          model: 'dev-embed',
          input: index % 2 ? 'a few words to embed' : ['one', 'two'],
        }),
    },
    {
      name: 'speech',
      // dev-tts (meSpeak) brings the whole process down after about a hundred syntheses in one process (a V8
      // "invalid size" fatal error); the speech burst above already made fifty.
      mixedShare: 10,
      make: async (index) => {
        const reply = await fetch(`${app.baseUrl}/v2/audio/speech`, {
          method: 'POST',
          headers: {
            'x-auth-token': key,
            'content-type': 'application/json',
            ...(index % 2 ? { 'Idempotency-Key': `speech-${Math.random()}` } : {}),
          },
          body: JSON.stringify({ model: 'dev-tts', voice: 'en-us', text: 'Hello there.' }),
        });
        return {
          status: reply.status,
          body: reply.status === 200 ? (await reply.arrayBuffer()).byteLength : await reply.text(),
        };
      },
    },
    {
      name: 'transcriptions: synchronous and asynchronous',
      make: (index) =>
        postTranscription(
          app.baseUrl,
          key,
          { bytes: wav, name: 'tone.wav' },
          { model: index % 2 ? 'dev-stt-async' : 'dev-stt' },
        ),
    },
  ];
  const requestsOf = async (kind: Kind) => (kind.prepare ? await kind.prepare() : kind.make!);

  it.each(KINDS.map((kind) => [kind.name, kind] as const))('%s', async (_name, kind) => {
    expectAllOk(await burst(await requestsOf(kind)));
    await expectSettled();
  });

  it('every kind at once', async () => {
    const bursts = KINDS.map(async (kind) => {
      const make = await requestsOf(kind);
      return Promise.all(
        Array.from({ length: Math.min(CONCURRENCY, kind.mixedShare ?? CONCURRENCY) }, (_, index) => make(index)),
      );
    });
    expectAllOk((await Promise.all(bursts)).flat());
    await expectSettled();
  });

  it('Runs on one thread: one at a time is active, the others refused with 400, none a 500', async () => {
    const thread = (await post('/v2/threads', {})).body.id as string;
    const replies = await burst(() =>
      post(`/v2/threads/${thread}/runs`, { assistant_id: assistantId, additional_messages: messages }),
    );
    const outcomes = new Set(
      replies.map((reply) => (reply.status === 200 ? 'created' : `${reply.status} ${reply.body?.error?.code}`)),
    );
    expect([...outcomes].filter((outcome) => outcome !== 'created' && outcome !== '400 run.active_run_exists')).toEqual(
      [],
    );
    expect(outcomes.has('created')).toBe(true);
    await expectSettled();
  });
});
