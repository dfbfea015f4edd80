import { FAKE_SPEECH_MP3 } from '../fakes/fake-openai';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { createOpenAIProvider } from '../../src/providers/openai/openai-provider';
import { ProviderError, type VendorAdapterOptions } from '../../src/providers/provider';
import { audioInput, collectAudio as collect, toneWav } from '../audio/audio-fixtures';
import { providerErrorOf } from './adapter-contract';

const API_KEY = 'sk-test-openai-0123456789abcdefSECRET';

describe('openai adapter: speech and transcription through the AI SDK, against a fake on loopback', () => {
  let fake: FakeVendorServer;
  const options = (overrides: Partial<VendorAdapterOptions> = {}): VendorAdapterOptions => ({
    vendor: 'openai',
    apiKey: API_KEY,
    baseURL: fake.baseURL,
    timeoutMs: 5_000,
    maxRetries: 0,
    ...overrides,
  });

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  it('speech: POST /audio/speech with the model, voice, text and mp3 format; the MP3 bytes come back as sent', async () => {
    const speech = await createOpenAIProvider(options()).speechModel!.synthesize({
      model: 'tts-1',
      voice: 'nova',
      text: 'Hello there.',
    });
    expect(await collect(speech.audio)).toEqual(FAKE_SPEECH_MP3);
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/v1/audio/speech');
    expect(sent.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent.body).toMatchObject({ model: 'tts-1', voice: 'nova', input: 'Hello there.', response_format: 'mp3' });
  });

  it("speech in another format and speed: OpenAI's response_format and speed are sent, the media type follows the format", async () => {
    const speech = await createOpenAIProvider(options()).speechModel!.synthesize({
      model: 'tts-1',
      voice: 'nova',
      text: 'Hello there.',
      format: 'wav',
      speed: 1.5,
    });
    expect(speech.mediaType).toBe('audio/wav');
    await collect(speech.audio);
    expect(fake.requests[0]!.body).toMatchObject({
      model: 'tts-1',
      voice: 'nova',
      input: 'Hello there.',
      response_format: 'wav',
      speed: 1.5,
    });
  });

  it('transcription: a temperature is sent as a form field', async () => {
    fake.script({ text: 'one' });
    await createOpenAIProvider(options()).transcriptionModel!.transcribe({
      model: 'whisper-1',
      audio: audioInput(toneWav(1, [[0, 1]]), 'wav', 1000),
      temperature: 0.4,
    });
    expect(fake.requests[0]!.rawBody).toContain('name="temperature"\r\n\r\n0.4');
  });

  it('transcription: the upload goes as multipart with language and prompt; segments, language and duration come back', async () => {
    fake.script({ text: 'one two three four' });
    const result = await createOpenAIProvider(options()).transcriptionModel!.transcribe({
      model: 'whisper-1',
      audio: audioInput(toneWav(1, [[0, 1]]), 'wav', 1000),
      language: 'en',
      prompt: 'counting',
    });
    expect(result).toEqual({
      text: 'one two three four',
      language: 'en',
      durationSeconds: 4.2,
      segments: [
        { text: 'one two t', start: 0, end: 2.1, speakerId: null },
        { text: 'hree four', start: 2.1, end: 4.2, speakerId: null },
      ],
    });
    const sent = fake.requests[0]!;
    expect(sent.path).toBe('/v1/audio/transcriptions');
    expect(sent.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    for (const part of [
      'name="model"\r\n\r\nwhisper-1',
      'name="language"\r\n\r\nen',
      'name="prompt"\r\n\r\ncounting',
      'name="response_format"\r\n\r\nverbose_json',
      'RIFF',
    ]) {
      expect(sent.rawBody).toContain(part);
    }
  });

  it('faults: a 401 is an auth error that never repeats the key, a 429 is retried, a 500 after retries is a server error', async () => {
    fake.script({ status: 401 });
    const auth = await providerErrorOf(
      createOpenAIProvider(options()).speechModel!.synthesize({ model: 'tts-1', voice: 'nova', text: 'x' }),
    );
    expect(auth.kind).toBe('auth');
    expect(auth.message).not.toContain(API_KEY);

    fake.script({ status: 429, retryAfterMs: 10 }, { text: 'after the retry' });
    const retried = await createOpenAIProvider(options({ maxRetries: 1 })).transcriptionModel!.transcribe({
      model: 'whisper-1',
      audio: audioInput(toneWav(0.5, [[0, 0.5]]), 'wav', 1000),
    });
    expect(retried.text).toBe('after the retry');
    expect(fake.requests).toHaveLength(3);

    fake.script({ status: 500 }, { status: 500 });
    const server = await providerErrorOf(
      createOpenAIProvider(options({ maxRetries: 1 })).transcriptionModel!.transcribe({
        model: 'whisper-1',
        audio: audioInput(toneWav(0.5, [[0, 0.5]]), 'wav', 1000),
      }),
    );
    expect(ProviderError.isInstance(server)).toBe(true);
    expect(server.kind).toBe('server');
  });
});
