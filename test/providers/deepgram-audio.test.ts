import { FAKE_DEEPGRAM_DURATION, FAKE_DEEPGRAM_MP3 } from '../fakes/fake-deepgram';
import { startFakeDeepgram, type FakeVendorServer } from '../fakes';
import { createDeepgramProvider } from '../../src/providers/deepgram/deepgram-provider';
import { ProviderError, type VendorAdapterOptions } from '../../src/providers/provider';
import { TestApp } from '../support/harness';
import { audioInput, collectAudio, postTranscription, toneWav } from '../audio/audio-fixtures';
import { providerErrorOf } from './adapter-contract';

const API_KEY = 'dg-test-0123456789abcdefSECRET';

describe('deepgram adapter: Aura speech and Nova transcription through @ai-sdk/deepgram, against a fake on loopback', () => {
  let fake: FakeVendorServer;
  const options = (overrides: Partial<VendorAdapterOptions> = {}): VendorAdapterOptions => ({
    vendor: 'deepgram',
    apiKey: API_KEY,
    baseURL: fake.url,
    timeoutMs: 5_000,
    maxRetries: 0,
    ...overrides,
  });

  beforeAll(async () => {
    fake = await startFakeDeepgram();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it('speech: POST /v1/speak with the voice in the model id, mp3 encoding and the text; the MP3 comes back as sent', async () => {
    const speech = await createDeepgramProvider(options()).speechModel!.synthesize({
      model: 'aura-2',
      voice: 'thalia-en',
      text: 'Hello there.',
    });
    expect(await collectAudio(speech.audio)).toEqual(FAKE_DEEPGRAM_MP3);
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/v1/speak');
    expect(sent.query).toEqual({ model: 'aura-2-thalia-en', encoding: 'mp3' });
    expect(sent.headers.authorization).toBe(`Token ${API_KEY}`);
    expect(sent.body).toEqual({ text: 'Hello there.' });
  });

  it('speech as pcm asks for linear16 without a container; a speed other than 1 is refused before any call (Aura has none)', async () => {
    const speech = await createDeepgramProvider(options()).speechModel!.synthesize({
      model: 'aura-2',
      voice: 'thalia-en',
      text: 'Hello there.',
      format: 'pcm',
      speed: 1,
    });
    expect(speech.mediaType).toBe('audio/pcm');
    await collectAudio(speech.audio);
    expect(fake.requests[0]!.query).toEqual({ model: 'aura-2-thalia-en', encoding: 'linear16', container: 'none' });
    const refused = await providerErrorOf(
      createDeepgramProvider(options()).speechModel!.synthesize({
        model: 'aura-2',
        voice: 'thalia-en',
        text: 'x',
        speed: 1.5,
      }),
    );
    expect(refused).toMatchObject({ kind: 'bad_request', message: expect.stringContaining('no speed setting') });
    expect(fake.requests).toHaveLength(1);
  });

  it('transcription: the audio is the raw body; utterances become segments with their speaker', async () => {
    fake.script({ text: 'One two three. Four five six.' });
    const wav = toneWav(1, [[0, 1]]);
    const result = await createDeepgramProvider(options()).transcriptionModel!.transcribe({
      model: 'nova-3',
      audio: audioInput(wav, 'wav', 1000),
      language: 'en',
      prompt: 'counting',
    });
    expect(result).toEqual({
      text: 'One two three. Four five six.',
      language: 'en',
      durationSeconds: FAKE_DEEPGRAM_DURATION,
      segments: [
        { text: 'One two three.', start: 0.5, end: 2.75, speakerId: '0' },
        { text: 'Four five six.', start: 2.75, end: 5, speakerId: '1' },
      ],
    });
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/v1/listen');
    expect(sent.query).toMatchObject({
      model: 'nova-3',
      language: 'en',
      detect_language: 'false',
      utterances: 'true',
      punctuate: 'true',
      smart_format: 'true',
    });
    expect(sent.headers['content-type']).toBe('audio/wav');
    expect(Number(sent.headers['content-length'])).toBe(wav.length);
    expect(sent.rawBody.startsWith('RIFF')).toBe(true);
  });

  it('without a language Deepgram detects it and reports it', async () => {
    const result = await createDeepgramProvider(options()).transcriptionModel!.transcribe({
      model: 'nova-3',
      audio: audioInput(toneWav(0.5, [[0, 0.5]]), 'wav'),
    });
    expect(result.language).toBe('en');
    expect(fake.requests[0]!.query).toMatchObject({ detect_language: 'true' });
    expect(fake.requests[0]!.query.language).toBeUndefined();
  });

  it("faults in Deepgram's own error body: a 401 is an auth error without the key, a 429 is retried, a 400 is final", async () => {
    fake.script({ status: 401 });
    const auth = await providerErrorOf(
      createDeepgramProvider(options()).speechModel!.synthesize({ model: 'aura-2', voice: 'thalia-en', text: 'x' }),
    );
    expect(auth.kind).toBe('auth');
    expect(auth.message).not.toContain(API_KEY);

    fake.reset();
    fake.script({ status: 429, retryAfter: '0' }, { text: 'after the retry' });
    const retried = await createDeepgramProvider(options({ maxRetries: 1 })).transcriptionModel!.transcribe({
      model: 'nova-3',
      audio: audioInput(toneWav(0.5, [[0, 0.5]]), 'wav'),
    });
    expect(retried.text).toBe('after the retry');
    expect(fake.requests).toHaveLength(2);

    fake.reset();
    fake.script({ status: 400 });
    const bad = await providerErrorOf(
      createDeepgramProvider(options({ maxRetries: 2 })).transcriptionModel!.transcribe({
        model: 'nova-3',
        audio: audioInput(toneWav(0.5, [[0, 0.5]]), 'wav'),
      }),
    );
    expect(ProviderError.isInstance(bad)).toBe(true);
    expect(bad.kind).toBe('bad_request');
    expect(fake.requests).toHaveLength(1);
  });
});

describe('deepgram through the service (catalog aura-2, nova-3, nova-3-async; DEEPGRAM_BASE_URL at the fake)', () => {
  let fake: FakeVendorServer;
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    fake = await startFakeDeepgram();
    app = await TestApp.start({ env: { DEEPGRAM_API_KEY: API_KEY, DEEPGRAM_BASE_URL: fake.url } });
    ({ key } = await app.createAccount({ balance: 100_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  const debits = async (service: string) =>
    (await app.request('GET', '/v2/organization/transactions?limit=200', { key })).body.transactions.filter(
      (row: any) => row.metadata.service === service,
    );

  it('the catalog lists the Deepgram models with their voices and prices', async () => {
    const models = (await app.request('GET', '/v2/models', { key })).body;
    expect(models['aura-2']).toMatchObject({
      type: 'tts',
      voices: expect.arrayContaining(['thalia-en', 'celeste-es']),
      max_input_characters: 2000,
    });
    expect(models['nova-3-async']).toMatchObject({ type: 'stt', asynchronous: true });
    const prices = (await app.request('GET', '/v2/models/prices', { key })).body;
    expect(JSON.stringify(prices)).toContain('nova-3');
  });

  it('speech: the MP3 reaches the client; one debit per character (aura-2: 300000 kopecks per 1M characters)', async () => {
    const text = 'x'.repeat(1000);
    const reply = await fetch(`${app.baseUrl}/v2/audio/speech`, {
      method: 'POST',
      headers: { 'x-auth-token': key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'aura-2', voice: 'helena-en', text }),
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('audio/mpeg');
    expect(Buffer.from(await reply.arrayBuffer())).toEqual(FAKE_DEEPGRAM_MP3);
    expect(fake.requests.at(-1)!.query.model).toBe('aura-2-helena-en');
    expect(await debits('speech')).toEqual([
      expect.objectContaining({ amount: 300, metadata: expect.objectContaining({ model: 'aura-2' }) }),
    ]);
  });

  it('an asynchronous nova-3 job ends completed with the utterance segments and speakers, billed per started second', async () => {
    fake.script({ text: 'Good morning. Good evening.' });
    // A 6-second file: the charge is at most what its header says it can last, and the fake reports 5.5 s.
    const submitted = await postTranscription(
      app.baseUrl,
      key,
      { bytes: toneWav(6, [[0, 1]]), name: 'call.wav' },
      { model: 'nova-3-async', language: 'en' },
    );
    expect(submitted.status).toBe(200);
    const id = submitted.body.request_id;
    let status = 'queued';
    while (status === 'queued' || status === 'processing') {
      await new Promise((resolve) => setTimeout(resolve, 20));
      status = (await app.request('GET', `/v2/audio/transcription/check/${id}`, { key })).body.status;
    }
    expect(status).toBe('completed');
    const result = await app.request('GET', `/v2/audio/transcription/result/${id}`, { key });
    expect(result.body).toMatchObject({
      text: 'Good morning. Good evening.',
      language: 'en',
      duration: FAKE_DEEPGRAM_DURATION,
      segments: [
        { text: 'Good morning.', speaker_id: '0' },
        { text: 'Good evening.', speaker_id: '1' },
      ],
    });
    // 6 started seconds at 43 kopecks a minute: a cost of 4.3, one debit of 5 whole kopecks.
    expect(result.body.usage.cost).toBe(4.3);
    expect(await debits('transcription')).toEqual([
      expect.objectContaining({
        amount: 5,
        metadata: expect.objectContaining({ model: 'nova-3-async', seconds: 6, vendor: 'deepgram' }),
      }),
    ]);
  });
});
