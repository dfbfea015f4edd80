import { startFakeGemini, startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { postTranscription, toneWav } from '../audio/audio-fixtures';
import { circuitsOf } from '../../src/routing/circuits';
import { pollUntil } from '../responses/helpers';
import { TestApp } from '../support/harness';
import { catalogWithRoutes } from './route-catalog';

/** Embeddings, speech and synchronous transcription to a route: the same failover as chat (api-decisions 32). */
describe('routes of embedding, speech and transcription models', () => {
  let app: TestApp;
  let openai: FakeVendorServer;
  let gemini: FakeVendorServer;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    [openai, gemini] = await Promise.all([startFakeOpenAI(), startFakeGemini()]);
    const { file } = catalogWithRoutes([
      {
        code: 'vectors',
        type: 'embed',
        targets: [{ model: 'text-embedding-3-small' }, { model: 'gemini-embedding-001' }],
      },
      { code: 'voice', type: 'tts', targets: [{ model: 'tts-1' }, { model: 'tts-1-hd' }] },
      { code: 'ears', type: 'stt', targets: [{ model: 'whisper-1' }, { model: 'gpt-4o-transcribe' }] },
      { code: 'ears-later', type: 'stt', targets: [{ model: 'whisper-1-async' }, { model: 'dev-stt-async' }] },
    ]);
    app = await TestApp.start({
      env: {
        CATALOG_PATH: file,
        OPENAI_API_KEY: 'sk-openai-test',
        OPENAI_BASE_URL: openai.baseURL,
        GEMINI_API_KEY: 'gemini-test',
        GEMINI_BASE_URL: gemini.baseURL,
      },
    });
    ({ key, accountId } = await app.createAccount({ balance: 100_000 }));
  });
  afterAll(async () => {
    await app.close();
    await Promise.all([openai.close(), gemini.close()]);
  });
  beforeEach(() => {
    openai.reset();
    gemini.reset();
    // Each test starts with closed circuits (circuit.test.ts).
    for (const vendor of ['openai', 'google']) circuitsOf(app.runtime.deps.providers).success(vendor);
  });

  const lastDebit = (service: string) =>
    app.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('type', '=', 'debit')
      .where(({ ref }) => ref('metadata', '->>').key('service' as never), '=', service as never)
      .orderBy('seq', 'desc')
      .execute();

  const embed = (input: string) => app.request('POST', '/v2/embeddings', { key, body: { model: 'vectors', input } });

  it('embeddings move on to the next vendor after a 503 and answer with the one that served; the last target keeps its retries', async () => {
    openai.script({ status: 503 });
    const reply = await embed('a few words');
    expect(reply.status).toBe(200);
    expect(openai.requests).toHaveLength(1);
    expect(gemini.requests).toHaveLength(1);
    expect(reply.body.model).toBe('gemini-embedding-001');
    // The last target gets the usual retries: Gemini's 500 is retried, and its second answer serves.
    openai.reset();
    gemini.reset();
    openai.script({ status: 503 });
    gemini.script({ status: 500 });
    const again = await embed('more words');
    expect(again.status).toBe(200);
    expect(openai.requests).toHaveLength(1);
    expect(gemini.requests).toHaveLength(2);
  });

  it('embeddings do not move on after a 400', async () => {
    openai.script({ status: 400 });
    const reply = await embed('a few words');
    expect(reply.status).toBe(400);
    expect(gemini.requests).toHaveLength(0);
  });

  it('speech moves on after a 429 and bills the target that served', async () => {
    openai.script({ status: 429, retryAfter: '20' });
    const reply = await fetch(`${app.baseUrl}/v2/audio/speech`, {
      method: 'POST',
      headers: { 'x-auth-token': key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'voice', voice: 'alloy', text: 'hello there' }),
    });
    expect(reply.status).toBe(200);
    await reply.arrayBuffer();
    expect(openai.requests.map((request) => request.body.model)).toEqual(['tts-1', 'tts-1-hd']);
    const [debit] = await lastDebit('speech');
    expect(debit.metadata).toMatchObject({ route: 'voice', model: 'tts-1-hd', vendor: 'openai' });
  });

  it('a synchronous transcription moves on after a reset connection', async () => {
    openai.script({ resetConnection: true });
    const wav = { bytes: toneWav(1, [[0, 0.5]]), name: 'tone.wav' };
    const reply = await postTranscription(app.baseUrl, key, wav, { model: 'ears' });
    expect(reply.status).toBe(200);
    expect(openai.requests).toHaveLength(2);
    const [debit] = await lastDebit('transcription');
    expect(debit.metadata).toMatchObject({ route: 'ears', model: 'gpt-4o-transcribe', vendor: 'openai' });
  });

  it('an asynchronous transcription moves on after a 503 in recorded steps, billed once at the target that served', async () => {
    openai.script({ status: 503 });
    const wav = { bytes: toneWav(1, [[0, 0.5]]), name: 'tone.wav' };
    const submitted = await postTranscription(app.baseUrl, key, wav, { model: 'ears-later' });
    expect(submitted.status).toBe(200);
    const id = submitted.body.request_id as string;
    const checked = await pollUntil(
      async () => (await app.request('GET', `/v2/audio/transcription/check/${id}`, { key })).body,
      (body) => body.status === 'completed' || body.status === 'failed',
      15_000,
    );
    expect(checked.status).toBe('completed');
    expect(openai.requests).toHaveLength(1);
    const debits = (await lastDebit('transcription')).filter(
      (debit) => (debit.metadata as { request_id?: string }).request_id === id,
    );
    expect(debits).toHaveLength(1);
    expect(debits[0].metadata).toMatchObject({ route: 'ears-later', model: 'dev-stt-async', vendor: 'dev' });
    if (app.engine !== 'temporal') {
      // The plan and the failover are steps of the job: a re-run goes on from dev-stt-async.
      const steps = await app.db
        .selectFrom('job_steps')
        .select(['activity', 'result'])
        .where('job_id', '=', id)
        .orderBy('step')
        .execute();
      expect(steps.map((step) => step.activity)).toEqual(['planTranscriptionRoute', 'transcribeAudio']);
      expect(steps[1].result).toMatchObject({ kind: 'failover', model: 'whisper-1-async', reason: 'server' });
    }
  });
});
