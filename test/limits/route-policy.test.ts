import OpenAI from 'openai';
import { publicRouteModules, type PublicRoutesDeps } from '../../src/http/routes';
import { operations } from '../../src/openapi/operations';
import { declaredIdempotency } from '../../src/idempotency/idempotency';
import { declaredModelWork } from '../../src/limits/account-limits';
import { pollUntil } from '../responses/helpers';
import { useTestApp } from '../support/harness';

/** A stand-in for every dependency: building the routers only records their routes; nothing is called. */
const inert: PublicRoutesDeps = new Proxy({} as PublicRoutesDeps, {
  get: () => new Proxy(function inert() {}, { get: () => () => undefined, apply: () => undefined }),
});

/** Every public POST route, with the model work and the Idempotency-Key scope its middleware declares. */
function postRoutes(): Array<{ path: string; work: ReturnType<typeof declaredModelWork>; idempotency?: string }> {
  return publicRouteModules.flatMap((module) =>
    module(inert)
      .stack.filter((layer) => layer.methods.includes('POST'))
      .map((layer) => ({
        path: String(layer.path),
        work: layer.stack.map(declaredModelWork).find(Boolean),
        idempotency: layer.stack.map(declaredIdempotency).find(Boolean),
      })),
  );
}

describe('account limits by route, on every surface', () => {
  it('every route that starts model work declares it, on /v2, /v1 and /openai/v1 alike; no other route does', () => {
    const routes = postRoutes();
    const declared = Object.fromEntries(
      routes.filter((route) => route.work).map((route) => [route.path, route.work!.job]),
    );
    expect(declared).toEqual({
      '/v2/responses': true,
      '/openai/v1/responses': true,
      '/v2/threads/runs': true,
      '/v2/threads/:threadId/runs': true,
      '/v2/chat/completions': false,
      '/v1/chat/completions': false,
      '/openai/v1/chat/completions': false,
      '/v2/embeddings': false,
      '/openai/v1/embeddings': false,
      '/v2/audio/speech': false,
      '/openai/v1/audio/speech': false,
      '/v2/audio/transcription': false,
      '/openai/v1/audio/transcriptions': false,
    });
    // A creation route of these kinds added to any surface without the declaration fails here.
    for (const route of routes.filter((entry) =>
      /\/(responses|runs|chat\/completions|embeddings|audio\/speech|audio\/transcriptions?)$/.test(entry.path),
    ))
      expect(route).toMatchObject({ work: expect.anything() });
  });

  it('every billable route declares its Idempotency-Key scope, on every surface; the documentation says so', async () => {
    const routes = postRoutes();
    // Billable: every route that starts model work (the test above proves which those are).
    const billable = routes.filter((route) => route.work);
    expect(Object.fromEntries(billable.map((route) => [route.path, route.idempotency]))).toEqual({
      '/v2/responses': 'responses',
      '/openai/v1/responses': 'responses',
      '/v2/threads/runs': 'runs',
      '/v2/threads/:threadId/runs': 'runs',
      '/v2/chat/completions': 'chat',
      '/v1/chat/completions': 'chat.v1',
      '/openai/v1/chat/completions': 'chat.openai',
      '/v2/embeddings': 'embeddings',
      '/openai/v1/embeddings': 'embeddings.openai',
      '/v2/audio/speech': 'speech',
      '/openai/v1/audio/speech': 'speech.openai',
      '/v2/audio/transcription': 'transcription',
      '/openai/v1/audio/transcriptions': 'transcription.openai',
    });
    // Nothing else takes a key: a key on a route that cannot honour it would promise what is not kept.
    expect(routes.filter((route) => route.idempotency && !billable.includes(route))).toEqual([]);
    const documented = new Set(
      operations
        .filter((operation) => operation.method === 'post' && operation.idempotencyKey)
        .map((operation) => operation.path.replace(/\{(\w+)\}/g, ':$1')),
    );
    expect(billable.map((route) => route.path).filter((path) => !documented.has(path))).toEqual([]);
  });
});

describe('/openai/v1 creation routes: account limits and Idempotency-Key as on /v2', () => {
  const suite = useTestApp();
  const client = () => new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });

  it('concurrent_jobs = 1: a second background Response is refused with 429 until the first ends', async () => {
    await suite.app.admin('PATCH', `/admin/accounts/${suite.accountId}`, { limits: { concurrent_jobs: 1 } });
    try {
      const running = await client().responses.create({
        model: 'dev-echo',
        input: '/delay 300 /words 3',
        background: true,
      });
      const refused = await client()
        .responses.create({ model: 'dev-echo', input: 'hi', background: true })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
      expect(refused).toMatchObject({ status: 429, code: 'request.rate_limited' });
      expect((refused as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('1');
      await pollUntil(
        async () => (await client().responses.retrieve(running.id)).status,
        (status) => status === 'completed',
      );
      // Admitted once the first ended; awaited to its end too, so its debit lands inside this test, not the next one's count.
      const admitted = await client().responses.create({ model: 'dev-echo', input: 'hi', background: true });
      await pollUntil(
        async () => (await client().responses.retrieve(admitted.id)).status,
        (status) => status === 'completed',
      );
    } finally {
      await suite.app.admin('PATCH', `/admin/accounts/${suite.accountId}`, { limits: { concurrent_jobs: null } });
    }
  });

  it('tokens_per_minute: chat completions, embeddings and speech on /openai/v1 are refused once the minute billed the limit', async () => {
    const other = await suite.app.createAccount();
    await suite.app.admin('PATCH', `/admin/accounts/${other.accountId}`, { limits: { tokens_per_minute: 5 } });
    const openai = new OpenAI({ apiKey: other.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });
    await openai.chat.completions.create({
      model: 'dev-echo',
      messages: [{ role: 'user', content: 'one two three four five six' }],
    });
    await expect(
      openai.chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    await expect(openai.embeddings.create({ model: 'dev-embed', input: 'hi' })).rejects.toBeInstanceOf(
      OpenAI.RateLimitError,
    );
    await expect(openai.audio.speech.create({ model: 'dev-tts', voice: 'en-us', input: 'hi' })).rejects.toBeInstanceOf(
      OpenAI.RateLimitError,
    );
    // Reading is not model work.
    expect((await openai.models.list()).data.length).toBeGreaterThan(0);
  });

  it('Idempotency-Key on chat completions and embeddings: the retry gets the stored reply and is not billed again', async () => {
    const debits = async () =>
      (await suite.app.request('GET', '/v2/organization/transactions?limit=200', { key: suite.key })).body.transactions
        .length;
    const before = await debits();
    const chat = () =>
      client()
        .chat.completions.create(
          { model: 'dev-echo', messages: [{ role: 'user', content: 'only once' }] },
          { headers: { 'Idempotency-Key': 'chat-once' } },
        )
        .withResponse();
    const [first, second] = [await chat(), await chat()];
    expect(second.data).toEqual(first.data);
    expect(second.response.headers.get('idempotent-replayed')).toBe('true');
    const embed = () =>
      client()
        .embeddings.create({ model: 'dev-embed', input: ['a', 'b'] }, { headers: { 'Idempotency-Key': 'embed-once' } })
        .withResponse();
    const [one, two] = [await embed(), await embed()];
    expect(two.data).toEqual(one.data);
    expect(two.response.headers.get('idempotent-replayed')).toBe('true');
    // One chat debit and one per embedded input.
    expect((await debits()) - before).toBe(3);

    const reused = client().chat.completions.create(
      { model: 'dev-echo', messages: [{ role: 'user', content: 'another body' }] },
      { headers: { 'Idempotency-Key': 'chat-once' } },
    );
    await expect(reused).rejects.toMatchObject({ status: 400, code: 'request.idempotency_key_reused' });
    const streamed = client().chat.completions.create(
      { model: 'dev-echo', messages: [{ role: 'user', content: 'x' }], stream: true },
      { headers: { 'Idempotency-Key': 'stream' } },
    );
    await expect(streamed).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('Idempotency-Key applies to completions without stream'),
    });
  });
});
