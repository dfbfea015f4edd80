import fs from 'node:fs';
import path from 'node:path';
import { mpg123Decoder } from '../../src/providers/dev/audio/bundled-codecs';
import { expectCarried } from '../support/carry';
import { useTestApp } from '../support/harness';
import { startReceiver } from '../webhooks/receiver';
import {
  debits,
  flacFile,
  MP4_HEAD,
  postTranscription,
  settle,
  streamTranscription,
  toneSamples,
  toneWav,
} from './audio-fixtures';

/** The decoded duration (seconds) of an MP3. */
async function mp3Duration(mp3: Buffer): Promise<number> {
  const decoder = new (mpg123Decoder().MPEGDecoder)();
  await decoder.ready;
  try {
    const decoded = decoder.decode(new Uint8Array(mp3));
    expect(decoded.samplesDecoded).toBeGreaterThan(0);
    return decoded.samplesDecoded / decoded.sampleRate;
  } finally {
    decoder.free();
  }
}

async function speech(
  baseUrl: string,
  key: string,
  body: unknown,
): Promise<{ status: number; bytes: Buffer; json: any; headers: Headers }> {
  const reply = await fetch(`${baseUrl}/v2/audio/speech`, {
    method: 'POST',
    headers: { 'x-auth-token': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const bytes = Buffer.from(await reply.arrayBuffer());
  const json = (reply.headers.get('content-type') ?? '').includes('json')
    ? JSON.parse(bytes.toString('utf8'))
    : undefined;
  return { status: reply.status, bytes, json, headers: reply.headers };
}

describe('audio: speech', () => {
  const suite = useTestApp();

  it('dev-tts answers valid MP3 whose decoded duration grows with the text, billed per character once', async () => {
    const short = await speech(suite.app.baseUrl, suite.key, {
      model: 'dev-tts',
      voice: 'en-us',
      text: 'Hello there.',
    });
    expect(short.status).toBe(200);
    expect(short.headers.get('content-type')).toBe('audio/mpeg');
    expect(short.bytes.subarray(0, 3).toString('latin1')).toBe('ID3');
    const text =
      'The quick brown fox jumps over the lazy dog. It was a bright cold day in April, and the clocks were striking thirteen.';
    const long = await speech(suite.app.baseUrl, suite.key, { model: 'dev-tts', voice: 'en-gb', text });
    expect(long.status).toBe(200);
    const [shortSeconds, longSeconds] = [await mp3Duration(short.bytes), await mp3Duration(long.bytes)];
    expect(shortSeconds).toBeGreaterThan(0.4);
    expect(longSeconds).toBeGreaterThan(shortSeconds * 3);

    const rows = await debits(suite, 'speech');
    expect(rows).toHaveLength(2);
    // 1 kopeck per 100 characters: each debit its exact cost less what the account paid ahead, rounded up; its usage
    // the characters billed.
    for (const row of rows) {
      expectCarried(row, row.metadata.characters / 100);
      expect(row.usage).toEqual({
        prompt_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        characters: row.metadata.characters,
      });
    }
    expect(rows[0].metadata).toMatchObject({ source: 'api', vendor: 'dev', model: 'dev-tts', service: 'speech' });
    expect(rows.map((row: any) => row.metadata.request_id)).toContain(long.headers.get('x-request-id'));
  });

  it('refuses an unknown voice, empty or over-long text, a wrong model and unknown fields with 400s in audio.', async () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ model: 'dev-tts', voice: 'alloy', text: 'hi' }, 'audio.unknown_voice', /voices: en-us, en-gb/],
      [{ model: 'dev-tts', voice: 'en-us', text: '   ' }, 'audio.invalid_request', /text must not be empty/],
      [{ model: 'dev-tts', voice: 'en-us', text: 'a'.repeat(1001) }, 'audio.text_too_long', /at most 1000/],
      [{ model: 'dev-echo', voice: 'en-us', text: 'hi' }, 'audio.invalid_request', /llm model/],
      [{ model: 'nope', voice: 'en-us', text: 'hi' }, 'audio.invalid_request', /Unknown model/],
      [{ model: 'dev-tts', voice: 'en-us', text: 'hi', speed: 2 }, 'audio.invalid_request', /speed/],
      [{ model: 'dev-tts', voice: 'en-us' }, 'audio.invalid_request', /text/],
    ];
    for (const [body, code, message] of cases) {
      const reply = await speech(suite.app.baseUrl, suite.key, body);
      expect({ body, status: reply.status, code: reply.json?.error.code }).toEqual({ body, status: 400, code });
      expect(reply.json.error.message).toMatch(message);
    }
    const tts = await suite.app.request('POST', '/v2/audio/speech', {
      key: suite.key,
      body: { model: 'tts-1', voice: 'alloy', text: 'hi' },
    });
    expect(tts.status).toBe(400);
    expect(tts.body.error.code).toBe('model.not_available');
  });

  it('402 when the balance is spent, before any synthesis', async () => {
    const poor = await suite.app.createAccount({ balance: 0 });
    const reply = await speech(suite.app.baseUrl, poor.key, { model: 'dev-tts', voice: 'en-us', text: 'hi' });
    expect(reply.status).toBe(402);
    expect(reply.json.error.code).toBe('organization.payment_required');
  });
});

describe('audio: synchronous transcription', () => {
  const suite = useTestApp();

  it('a WAV of two tones separated by silence: two segments at the right times, the true duration, billed per second', async () => {
    const wav = toneWav(3.5, [
      [0.5, 1.5],
      [2.25, 3],
    ]);
    const reply = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: wav, name: 'tones.wav' },
      { model: 'dev-stt', language: 'en', source: 'test-suite' },
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ text: '', language: 'en', duration: 3.5, usage: { cost: 4 } });
    expect(reply.body.segments).toEqual([
      { text: '', start: 0.5, end: 1.5, speaker_id: null },
      { text: '', start: 2.25, end: 3, speaker_id: null },
    ]);
    expect(reply.body.notice).toMatch(/does not recognise words/);
    const rows = await debits(suite, 'transcription');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      amount: 4,
      metadata: { service: 'transcription', model: 'dev-stt', vendor: 'dev', seconds: 4, cost: 4 },
    });
    expect(rows[0].usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, seconds: 4 });
  });

  it('FLAC and Ogg Vorbis (spec: the flac and ogg extensions) are decoded: the same segments, duration and bill as the WAV', async () => {
    const spans: Array<[number, number]> = [
      [0.5, 1.5],
      [2.25, 3],
    ];
    // The FLAC is written by the test (fixtures: flacFile, checked with the reference decoder); the Ogg Vorbis file is
    // the same tones encoded by oggenc (test/audio/fixtures/README.md).
    const files = [
      { bytes: flacFile(toneSamples(3.5, spans), 16_000), name: 'tones.flac' },
      { bytes: flacFile(toneSamples(3.5, spans), 16_000, { blockSize: 1152 }), name: 'tones-small-blocks.flac' },
      { bytes: fs.readFileSync(path.join(__dirname, 'fixtures/tones.ogg')), name: 'tones.ogg' },
      { bytes: fs.readFileSync(path.join(__dirname, 'fixtures/tones.ogg')), name: 'tones.oga' },
    ];
    for (const file of files) {
      const reply = await postTranscription(suite.app.baseUrl, suite.key, file, { model: 'dev-stt' });
      expect({ name: file.name, status: reply.status, body: reply.status === 200 ? undefined : reply.body }).toEqual({
        name: file.name,
        status: 200,
      });
      expect(reply.body).toMatchObject({ text: '', duration: 3.5, usage: { cost: 4 } });
      const segments = reply.body.segments.map((segment: any) => [segment.start, segment.end]);
      expect(segments).toHaveLength(2);
      segments.flat().forEach((time: number, index: number) => expect(time).toBeCloseTo(spans.flat()[index]!, 1));
    }

    // More audio than the FLAC's STREAMINFO declares (what its hold and charge were bounded by) is refused.
    const understated = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: flacFile(toneSamples(3.5, spans), 16_000, { totalSamples: 16_000 }), name: 'understated.flac' },
      { model: 'dev-stt' },
    );
    expect([understated.status, understated.body.error?.message]).toEqual([
      400,
      expect.stringMatching(/holds more audio than its STREAMINFO declares/),
    ]);
    // Ogg Opus passes the upload's checks (vendors take it) and dev-stt says it decodes Vorbis only.
    const opus = Buffer.from(fs.readFileSync(path.join(__dirname, 'fixtures/tones.ogg')));
    const head = opus.subarray(27 + opus[26]!);
    head.write('OpusHead', 0, 'latin1');
    head[8] = 1; // version
    head[9] = 1; // channels
    head.writeUInt16LE(312, 10); // pre-skip
    const refused = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: opus, name: 'voice.ogg' },
      { model: 'dev-stt' },
    );
    expect([refused.status, refused.body.error?.message]).toEqual([
      400,
      expect.stringMatching(/this Ogg file is Opus/),
    ]);
  });

  it('a dev-tts MP3 comes back with its words', async () => {
    const text = 'Switchyard speaks and listens.';
    const mp3 = await speech(suite.app.baseUrl, suite.key, { model: 'dev-tts', voice: 'en-us', text });
    const reply = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: mp3.bytes, name: 'speech.mp3' },
      { model: 'dev-stt' },
    );
    expect(reply.status).toBe(200);
    expect(reply.body.text).toBe(text);
    expect(reply.body.language).toBe('en');
    expect(reply.body.duration).toBeGreaterThan(1);
    expect(reply.body.segments.map((segment: any) => segment.text).join(' ')).toBe(text);
    expect(reply.body.notice).toBeUndefined();
  });

  it('400s for a missing file, a wrong extension or content, bad fields; 415 for a body that is not multipart', async () => {
    const billed = (await debits(suite, 'transcription')).length;
    const wav = toneWav(0.5, [[0, 0.5]]);
    const cases: Array<[{ bytes: Buffer; name: string } | undefined, Record<string, string>, string, RegExp]> = [
      [undefined, { model: 'dev-stt' }, 'transcription.invalid_request', /no "file" part/],
      [{ bytes: wav, name: 'tones.txt' }, { model: 'dev-stt' }, 'audio.unsupported_format', /no supported extension/],
      [
        { bytes: wav, name: 'tones.mp3' },
        { model: 'dev-stt' },
        'audio.unsupported_format',
        /is WAV, not what its .mp3/,
      ],
      [
        { bytes: Buffer.from('just some text, not audio at all'), name: 'notes.wav' },
        { model: 'dev-stt' },
        'audio.unsupported_format',
        /not audio/,
      ],
      [{ bytes: wav, name: 'tones.wav' }, {}, 'transcription.invalid_request', /model/],
      [
        { bytes: wav, name: 'tones.wav' },
        { model: 'dev-stt', source: 's'.repeat(65) },
        'transcription.invalid_request',
        /source is at most 64/,
      ],
      [
        { bytes: wav, name: 'tones.wav' },
        { model: 'dev-stt', beam_size: 'wide' },
        'transcription.invalid_request',
        /beam_size/,
      ],
      [
        { bytes: wav, name: 'tones.wav' },
        { model: 'dev-stt', temperature: '0' },
        'transcription.invalid_request',
        /temperature/,
      ],
      [
        { bytes: wav, name: 'tones.wav' },
        { model: 'dev-stt', callback_url: 'http://127.0.0.1:9/cb' },
        'transcription.invalid_request',
        /asynchronous models only/,
      ],
      [
        { bytes: wav, name: 'tones.wav' },
        { model: 'dev-stt-async', meta: '[1,2]' },
        'transcription.invalid_request',
        /meta must be a JSON object/,
      ],
      [{ bytes: wav, name: 'tones.wav' }, { model: 'dev-tts' }, 'transcription.invalid_request', /tts model/],
      [
        { bytes: MP4_HEAD, name: 'x.m4a' },
        { model: 'dev-stt' },
        'transcription.invalid_request',
        /WAV, MP3, FLAC and Ogg Vorbis files only; this file is MP4/,
      ],
    ];
    for (const [file, fields, code, message] of cases) {
      const reply = await postTranscription(suite.app.baseUrl, suite.key, file, fields);
      expect({ fields, status: reply.status, code: reply.body?.error?.code }).toEqual({ fields, status: 400, code });
      expect(reply.body.error.message).toMatch(message);
    }
    const json = await suite.app.request('POST', '/v2/audio/transcription', {
      key: suite.key,
      body: { model: 'dev-stt' },
    });
    expect(json.status).toBe(415);
    expect(json.body.error.code).toBe('request.unsupported_media_type');
    expect(await debits(suite, 'transcription')).toHaveLength(billed);
  });

  it('413 with the envelope while an upload over 25 MiB is still arriving', async () => {
    const billed = (await debits(suite, 'transcription')).length;
    // 40 MiB offered, in pieces, each after the previous was taken: the reply must come before the end.
    const reply = await streamTranscription(
      suite.app.baseUrl,
      suite.key,
      { model: 'dev-stt' },
      { name: 'big.wav', head: toneWav(1, [[0, 1]]), fillBytes: 40 * (1 << 20), fill: 1 },
    );
    expect(reply.status).toBe(413);
    expect(reply.body.error.code).toBe('request.too_large');
    expect(reply.sentWhenAnswered).toBeLessThan(40 * (1 << 20));
    expect(await debits(suite, 'transcription')).toHaveLength(billed);
  });
});

describe('audio: asynchronous transcription', () => {
  const suite = useTestApp();

  it('queued → completed with check, result and meta, a callback to a loopback listener, billed once', async () => {
    const receiver = await startReceiver();
    try {
      const wav = toneWav(2, [[0.25, 1]]);
      const meta = { ticket: 'T-1', tags: ['a', 'b'] };
      const submitted = await postTranscription(
        suite.app.baseUrl,
        suite.key,
        { bytes: wav, name: 'tones.wav' },
        {
          model: 'dev-stt-async',
          callback_url: `${receiver.url}/hook`,
          meta: JSON.stringify(meta),
          language: 'de',
          prompt: 'tones',
          beam_size: '5',
        },
      );
      expect(submitted.status).toBe(200);
      expect(submitted.body).toEqual({ request_id: expect.stringMatching(/^stt_/), status: 'queued' });
      const id = submitted.body.request_id;
      expect(await settle(suite, id)).toBe('completed');
      const result = await suite.app.request('GET', `/v2/audio/transcription/result/${id}`, { key: suite.key });
      expect(result.status).toBe(200);
      expect(result.body).toMatchObject({
        text: '',
        language: 'de',
        duration: 2,
        segments: [{ start: 0.25, end: 1 }],
        usage: { cost: 2 },
        meta,
      });

      while (receiver.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const [callback] = receiver.requests;
      expect(callback!.path).toBe('/hook');
      expect(JSON.parse(callback!.body)).toEqual({
        request_id: id,
        status: 'completed',
        status_at: expect.any(Number),
      });
      const rows = await debits(suite, 'transcription');
      expect(rows).toEqual([
        expect.objectContaining({
          amount: 2,
          metadata: expect.objectContaining({ request_id: id, model: 'dev-stt-async' }),
        }),
      ]);
      // The upload is gone once the job ended.
      const chunks = await suite.app.db
        .selectFrom('transcription_chunks')
        .select('seq')
        .where('transcription_id', '=', id)
        .execute();
      expect(chunks).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('result before the end is 400 transcription.not_ready; another account sees 404; a failed job says why', async () => {
    const other = await suite.app.createAccount();
    const wav = toneWav(1, [[0, 1]]);
    const submitted = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: wav, name: 'tones.wav' },
      { model: 'dev-stt-async' },
    );
    const id = submitted.body.request_id;
    // Not done yet, or done: either way the first answer is well-formed; park the row as processing to be sure.
    await settle(suite, id);
    await suite.app.db.updateTable('transcriptions').set({ status: 'processing' }).where('id', '=', id).execute();
    const early = await suite.app.request('GET', `/v2/audio/transcription/result/${id}`, { key: suite.key });
    expect(early.status).toBe(400);
    expect(early.body.error.code).toBe('transcription.not_ready');
    for (const path of [
      `/v2/audio/transcription/check/${id}`,
      `/v2/audio/transcription/result/${id}`,
      '/v2/audio/transcription/check/stt_nothing',
    ]) {
      const reply = await suite.app.request('GET', path, { key: other.key });
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('transcription.not_found');
    }

    const failing = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: MP4_HEAD, name: 'x.m4a' },
      { model: 'dev-stt-async' },
    );
    expect(await settle(suite, failing.body.request_id)).toBe('failed');
    const failed = await suite.app.request('GET', `/v2/audio/transcription/result/${failing.body.request_id}`, {
      key: suite.key,
    });
    expect(failed.status).toBe(400);
    expect(failed.body.error).toMatchObject({
      code: 'transcription.failed',
      message: expect.stringMatching(/WAV, MP3, FLAC and Ogg Vorbis files only; this file is MP4/),
    });
  });

  it('refuses a callback_url the SSRF guard refuses', async () => {
    const wav = toneWav(0.5, [[0, 0.5]]);
    const reply = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: wav, name: 'tones.wav' },
      { model: 'dev-stt-async', callback_url: 'ftp://example.com/x' },
    );
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('transcription.invalid_request');
  });
});
