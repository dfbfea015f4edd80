import { createOpenAI } from '@ai-sdk/openai';
import { experimental_generateSpeech as generateSpeech, experimental_transcribe as transcribe } from 'ai';
import OpenAI, { toFile } from 'openai';
import { debits, toneWav } from '../audio/audio-fixtures';
import { useTestApp, type TestSuite } from '../support/harness';

/**
 * /openai/v1/audio/speech and /openai/v1/audio/transcriptions through the official `openai` package and the
 * Vercel AI SDK, unmodified but for `baseURL` and `apiKey`: the /v2 audio service underneath (voices, billing,
 * upload checks), OpenAI's shapes and formats on top.
 */
const client = (suite: TestSuite) =>
  new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/openai/v1`, maxRetries: 0 });
const SENTENCE = 'Hello from Switchyard.';

describe('/openai/v1/audio with the OpenAI SDK', () => {
  const suite = useTestApp();

  it('audio.speech.create: mp3 by default, wav and pcm; billed per character as on /v2', async () => {
    const mp3 = Buffer.from(
      await (
        await client(suite).audio.speech.create({ model: 'dev-tts', voice: 'en-us', input: SENTENCE })
      ).arrayBuffer(),
    );
    expect(mp3.subarray(0, 3).toString('latin1')).toBe('ID3');

    const wavReply = await client(suite).audio.speech.create({
      model: 'dev-tts',
      voice: 'en-us',
      input: SENTENCE,
      response_format: 'wav',
    });
    const wav = Buffer.from(await wavReply.arrayBuffer());
    expect(wavReply.headers.get('content-type')).toBe('audio/wav');
    expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.toString('latin1', 8, 12)).toBe('WAVE');
    expect(wav.readUInt32LE(24)).toBe(22_050);
    expect(wav.readUInt32LE(40)).toBe(wav.length - 44);
    const wavSeconds = wav.readUInt32LE(40) / 2 / 22_050;
    expect(wavSeconds).toBeGreaterThan(0.8);

    const pcmReply = await client(suite).audio.speech.create({
      model: 'dev-tts',
      voice: 'en-us',
      input: SENTENCE,
      response_format: 'pcm',
    });
    const pcm = Buffer.from(await pcmReply.arrayBuffer());
    expect(pcmReply.headers.get('content-type')).toBe('audio/pcm');
    // 16-bit mono at 24 kHz: the same speech as the WAV, resampled.
    expect(pcm.length / 2 / 24_000).toBeCloseTo(wavSeconds, 1);

    // speed: twice as fast is about half as long.
    const fast = Buffer.from(
      await (
        await client(suite).audio.speech.create({
          model: 'dev-tts',
          voice: 'en-us',
          input: SENTENCE,
          response_format: 'wav',
          speed: 2,
        })
      ).arrayBuffer(),
    );
    expect((fast.length - 44) / 2 / 22_050).toBeLessThan(wavSeconds * 0.75);

    const rows = await debits(suite, 'speech');
    expect(rows).toHaveLength(4);
    for (const row of rows) expect(row.usage).toMatchObject({ characters: SENTENCE.length });
  });

  it('an Idempotency-Key: the retry gets the same bytes and is not billed again', async () => {
    const send = () =>
      fetch(`${suite.app.baseUrl}/openai/v1/audio/speech`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${suite.key}`,
          'content-type': 'application/json',
          'idempotency-key': 'speech-once',
        },
        body: JSON.stringify({ model: 'dev-tts', voice: 'en-us', input: SENTENCE, response_format: 'pcm' }),
      });
    const before = (await debits(suite, 'speech')).length;
    const [first, second] = [await send(), await send()];
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(Buffer.from(await second.arrayBuffer())).toEqual(Buffer.from(await first.arrayBuffer()));
    expect(second.headers.get('content-type')).toBe('audio/pcm');
    expect((await debits(suite, 'speech')).length - before).toBe(1);
  });

  it("refusals in OpenAI's error body: an unsupported format, a voice the model lacks, a speed out of range", async () => {
    const opus = client(suite).audio.speech.create({
      model: 'dev-tts',
      voice: 'en-us',
      input: SENTENCE,
      response_format: 'opus',
    });
    await expect(opus).rejects.toMatchObject({
      status: 400,
      code: 'audio.invalid_request',
      message: expect.stringContaining('opus is not supported here; use one of mp3, wav, pcm'),
    });
    const voice = client(suite).audio.speech.create({ model: 'dev-tts', voice: 'alloy', input: SENTENCE });
    await expect(voice).rejects.toMatchObject({ status: 400, code: 'audio.unknown_voice' });
    const speed = client(suite).audio.speech.create({ model: 'dev-tts', voice: 'en-us', input: SENTENCE, speed: 4 });
    await expect(speed).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('dev-tts speaks at 0.46 to 2.57 times its normal speed'),
    });
    expect(await debits(suite, 'speech')).toHaveLength(5);
  });

  it('audio.transcriptions.create: json, text, verbose_json with segments, srt, vtt; billed per second', async () => {
    const mp3 = Buffer.from(
      await (
        await client(suite).audio.speech.create({ model: 'dev-tts', voice: 'en-us', input: SENTENCE })
      ).arrayBuffer(),
    );
    const file = () => toFile(mp3, 'hello.mp3', { type: 'audio/mpeg' });
    const before = (await debits(suite, 'transcription')).length;

    const json = await client(suite).audio.transcriptions.create({ model: 'dev-stt', file: await file() });
    expect(json.text).toBe(SENTENCE);
    expect(json.usage).toMatchObject({ type: 'duration', seconds: expect.any(Number) });

    const text = await client(suite).audio.transcriptions.create({
      model: 'dev-stt',
      file: await file(),
      response_format: 'text',
      language: 'en',
      prompt: 'a greeting',
      temperature: 0,
    });
    expect(String(text).trim()).toBe(SENTENCE);

    const verbose = await client(suite).audio.transcriptions.create({
      model: 'dev-stt',
      file: await file(),
      response_format: 'verbose_json',
      timestamp_granularities: ['segment'],
    });
    // OpenAI names the language (`english`), not its code.
    expect(verbose).toMatchObject({ text: SENTENCE, language: 'english', duration: expect.any(Number) });
    expect(verbose.segments!.length).toBeGreaterThan(0);
    expect(verbose.segments![0]).toMatchObject({
      id: 0,
      text: expect.any(String),
      start: expect.any(Number),
      end: expect.any(Number),
    });

    const srt = String(
      await client(suite).audio.transcriptions.create({ model: 'dev-stt', file: await file(), response_format: 'srt' }),
    );
    expect(srt).toMatch(/^1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n\S/);
    const vtt = String(
      await client(suite).audio.transcriptions.create({ model: 'dev-stt', file: await file(), response_format: 'vtt' }),
    );
    expect(vtt).toMatch(/^WEBVTT\n\n00:00:\d\d\.\d{3} --> 00:00:\d\d\.\d{3}\n\S/);

    const rows = await debits(suite, 'transcription');
    expect(rows.length - before).toBe(5);
    expect(rows[0].usage).toMatchObject({ seconds: json.usage!.type === 'duration' ? json.usage!.seconds : -1 });
  });

  it('transcription refusals: word timestamps, an asynchronous model, a file whose content is not its extension', async () => {
    const wav = await toFile(toneWav(1, [[0.1, 0.9]]), 'tone.wav', { type: 'audio/wav' });
    const words = client(suite).audio.transcriptions.create({
      model: 'dev-stt',
      file: wav,
      response_format: 'verbose_json',
      timestamp_granularities: ['word'],
    });
    await expect(words).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('word timestamps are not available'),
    });
    const asynchronous = client(suite).audio.transcriptions.create({
      model: 'dev-stt-async',
      file: await toFile(toneWav(1, [[0.1, 0.9]]), 'tone.wav'),
    });
    await expect(asynchronous).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('/v2/audio/transcription'),
    });
    const mislabelled = client(suite).audio.transcriptions.create({
      model: 'dev-stt',
      file: await toFile(toneWav(1, [[0.1, 0.9]]), 'tone.mp3'),
    });
    await expect(mislabelled).rejects.toMatchObject({ status: 400, code: 'audio.unsupported_format' });
  });
});

describe('/openai/v1/audio with the Vercel AI SDK', () => {
  const suite = useTestApp();
  const provider = () => createOpenAI({ baseURL: `${suite.app.baseUrl}/openai/v1`, apiKey: suite.key });

  it('experimental_generateSpeech, then experimental_transcribe of what it said', async () => {
    const { audio } = await generateSpeech({
      model: provider().speech('dev-tts'),
      text: SENTENCE,
      voice: 'en-us',
      maxRetries: 0,
    });
    expect(audio.mediaType).toBe('audio/mpeg');
    expect(Buffer.from(audio.uint8Array).subarray(0, 3).toString('latin1')).toBe('ID3');
    const wav = await generateSpeech({
      model: provider().speech('dev-tts'),
      text: SENTENCE,
      voice: 'en-us',
      outputFormat: 'wav',
      maxRetries: 0,
    });
    expect(Buffer.from(wav.audio.uint8Array).toString('latin1', 0, 4)).toBe('RIFF');

    const transcript = await transcribe({
      model: provider().transcription('dev-stt'),
      audio: audio.uint8Array,
      maxRetries: 0,
    });
    expect(transcript.text).toBe(SENTENCE);
    const verbose = await transcribe({
      model: provider().transcription('dev-stt'),
      audio: audio.uint8Array,
      providerOptions: { openai: { language: 'en', timestampGranularities: ['segment'] } },
      maxRetries: 0,
    });
    expect(verbose.text).toBe(SENTENCE);
    expect(verbose.segments.length).toBeGreaterThan(0);
    expect(verbose.durationInSeconds).toBeGreaterThan(0.5);
    expect(verbose.language).toBe('en');
  });
});
