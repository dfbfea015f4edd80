import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { SPEECH_FORMATS, type SpeechModel, type SpeechRequest, type SpeechResult } from '../../provider';
import { lamejs } from './bundled-codecs';
import { usltTag } from './id3';
import { wavFile } from './wav-reader';

/**
 * dev-tts (api-decisions 24): real speech, offline. meSpeak (eSpeak compiled to JavaScript) renders each
 * sentence to 22.05 kHz PCM, lamejs encodes it to 48 kbit/s mono MP3 as it goes, and the file starts with
 * an ID3v2.4 tag whose `USLT` frame holds the text spoken, which dev-stt reads back.
 *
 * Both run on the event loop, so the text is rendered a sentence (at most ~200 characters) at a time and
 * encoded in blocks of about a second, yielding between them: a long text never stalls other requests for
 * more than a few tens of milliseconds, and the client receives the first sentence while the next renders.
 */

/** Voices of dev-tts (the catalog lists the same names): meSpeak's voice, and its ISO 639-2 language for USLT. */
export const DEV_VOICES: Readonly<Record<string, { file: string; language: string }>> = {
  'en-us': { file: 'mespeak/voices/en/en-us.json', language: 'eng' },
  'en-gb': { file: 'mespeak/voices/en/en.json', language: 'eng' },
  de: { file: 'mespeak/voices/de.json', language: 'deu' },
  fr: { file: 'mespeak/voices/fr.json', language: 'fra' },
  es: { file: 'mespeak/voices/es.json', language: 'spa' },
  it: { file: 'mespeak/voices/it.json', language: 'ita' },
};

const SAMPLE_RATE = 22_050;
/** OpenAI's `pcm` rate. */
const PCM_SAMPLE_RATE = 24_000;
/** eSpeak's normal speed, and the range it speaks at (80-450 words a minute) as multiples of it. */
const WORDS_PER_MINUTE = 175;
const MIN_SPEED = 80 / WORDS_PER_MINUTE;
const MAX_SPEED = 450 / WORDS_PER_MINUTE;
const BITRATE_KBPS = 48;
const MAX_PIECE_CHARACTERS = 200;
/** lamejs frames are 1,152 samples; 19 of them are about a second of audio. */
const ENCODE_BLOCK_SAMPLES = 1152 * 19;

type MeSpeak = typeof import('mespeak');
let engine: MeSpeak | undefined;
let rendersOnEngine = 0;
/**
 * eSpeak (compiled to JavaScript) keeps state across renders that only grows: some 70 renders into one instance, an
 * array inside it outgrows V8's limit and the process dies with a fatal error (no exception to catch). So an
 * instance renders this many pieces and is then dropped for a fresh one (starting one holds the event loop for some
 * 0.4 s on this project's 2-core machine, once every 32 pieces).
 */
const RENDERS_PER_ENGINE = 32;

function meSpeak(voiceFile: string): { engine: MeSpeak; voiceId: string } {
  if (!engine || ++rendersOnEngine > RENDERS_PER_ENGINE) {
    engine = loadMeSpeak();
    rendersOnEngine = 1;
  }
  const voice = require(voiceFile) as { voice_id: string };
  if (!engine.isVoiceLoaded(voice.voice_id)) engine.loadVoice(voice);
  return { engine, voiceId: voice.voice_id };
}

/**
 * A fresh meSpeak instance: its two files run anew as CommonJS modules, outside any module cache, so nothing keeps
 * an old instance alive once it is dropped and a test runner's module registry cannot hand back the old one. They
 * are compiled once (eSpeak is 4.9 MB of JavaScript: compiling it is most of a load's cost) and run per instance.
 */
function loadMeSpeak(): MeSpeak {
  meSpeakScripts ??= (() => {
    const directory = path.dirname(require.resolve('mespeak'));
    const compile = (file: string) => {
      const filename = path.join(directory, file);
      const wrapped = `(function (module, exports, require, __filename, __dirname) {${fs.readFileSync(filename, 'utf8')}\n})`;
      return { filename, script: new vm.Script(wrapped, { filename }) };
    };
    return { index: compile('index.js'), eSpeak: compile('ESpeak.js') };
  })();
  const run = (compiled: { filename: string; script: vm.Script }, load: (id: string) => unknown): unknown => {
    const module = { exports: {} as unknown };
    (compiled.script.runInThisContext() as (...args: unknown[]) => void)(
      module,
      module.exports,
      load,
      compiled.filename,
      path.dirname(compiled.filename),
    );
    return module.exports;
  };
  // On load meSpeak warns on the console that it cannot play audio outside a browser; it only renders here.
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    const eSpeak = run(meSpeakScripts.eSpeak, require);
    const loaded = run(meSpeakScripts.index, (id) => (id === './ESpeak.js' ? eSpeak : require(id))) as MeSpeak;
    loaded.loadConfig(require('mespeak/src/mespeak_config.json'));
    return loaded;
  } finally {
    console.warn = warn;
  }
}
let meSpeakScripts:
  { index: { filename: string; script: vm.Script }; eSpeak: { filename: string; script: vm.Script } } | undefined;

export function createDevSpeechModel(fail: (message: string) => Error): SpeechModel {
  return {
    async synthesize(request: SpeechRequest): Promise<SpeechResult> {
      const voice = DEV_VOICES[request.voice];
      if (!voice)
        throw fail(`dev-tts has no voice "${request.voice}" (voices: ${Object.keys(DEV_VOICES).join(', ')}).`);
      const speed = request.speed ?? 1;
      if (speed < MIN_SPEED || speed > MAX_SPEED)
        throw fail(
          `dev-tts speaks at ${MIN_SPEED.toFixed(2)} to ${MAX_SPEED.toFixed(2)} times its normal speed; speed ${speed} is outside.`,
        );
      const pieces = splitForSpeech(request.text);
      if (pieces.length === 0) throw fail('dev-tts needs text with at least one word.');
      const wordsPerMinute = Math.round(WORDS_PER_MINUTE * speed);
      const renderPiece = (text: string) => render(text, voice.file, wordsPerMinute);
      // The first sentence is rendered before answering, so that a failure is still an error status.
      const rendered = rendering(renderPiece(pieces[0]!), pieces.slice(1), renderPiece, request.signal);
      const format = request.format ?? 'mp3';
      const audio =
        format === 'mp3' ? encode(rendered, request, voice) : format === 'pcm' ? rawPcm(rendered) : wav(rendered);
      return { mediaType: SPEECH_FORMATS[format], audio };
    },
  };

  /** The PCM of each piece in turn (the first already rendered), cancellable between pieces. */
  async function* rendering(
    first: Int16Array,
    rest: string[],
    renderPiece: (text: string) => Int16Array,
    signal?: AbortSignal,
  ): AsyncGenerator<Int16Array> {
    yield first;
    for (const piece of rest) {
      await yieldToEventLoop();
      if (signal?.aborted) throw fail('dev-tts was cancelled.');
      yield renderPiece(piece);
    }
  }

  async function* encode(
    pcms: AsyncIterable<Int16Array>,
    request: SpeechRequest,
    voice: { file: string; language: string },
  ): AsyncGenerator<Uint8Array> {
    yield usltTag(request.text, voice.language);
    const encoder = new (lamejs().Mp3Encoder)(1, SAMPLE_RATE, BITRATE_KBPS);
    for await (const pcm of pcms) {
      for (let at = 0; at < pcm.length; at += ENCODE_BLOCK_SAMPLES) {
        if (request.signal?.aborted) throw fail('dev-tts was cancelled.');
        const frames = encoder.encodeBuffer(pcm.subarray(at, at + ENCODE_BLOCK_SAMPLES));
        if (frames.length > 0) yield Buffer.from(frames.buffer, frames.byteOffset, frames.length);
        await yieldToEventLoop();
      }
    }
    const tail = encoder.flush();
    if (tail.length > 0) yield Buffer.from(tail.buffer, tail.byteOffset, tail.length);
  }
}

/** OpenAI's `pcm`: 16-bit little-endian mono at 24 kHz, each piece resampled (linearly) from the renderer's rate. */
async function* rawPcm(pcms: AsyncIterable<Int16Array>): AsyncGenerator<Uint8Array> {
  for await (const pcm of pcms) yield littleEndian(resample(pcm, SAMPLE_RATE, PCM_SAMPLE_RATE));
}

/** A WAV file (16-bit mono at the renderer's rate): its header needs the length, so it is sent whole. */
async function* wav(pcms: AsyncIterable<Int16Array>): AsyncGenerator<Uint8Array> {
  const pieces: Int16Array[] = [];
  for await (const pcm of pcms) pieces.push(pcm);
  const all = new Int16Array(pieces.reduce((length, pcm) => length + pcm.length, 0));
  pieces.reduce((at, pcm) => (all.set(pcm, at), at + pcm.length), 0);
  yield wavFile(all, SAMPLE_RATE);
}

const littleEndian = (pcm: Int16Array) => {
  const bytes = Buffer.alloc(pcm.length * 2);
  pcm.forEach((sample, index) => bytes.writeInt16LE(sample, index * 2));
  return bytes;
};

function resample(pcm: Int16Array, from: number, to: number): Int16Array {
  const out = new Int16Array(Math.round((pcm.length * to) / from));
  for (let index = 0; index < out.length; index++) {
    const at = (index * from) / to;
    const left = Math.floor(at);
    const right = Math.min(left + 1, pcm.length - 1);
    out[index] = Math.round(pcm[left]! + (pcm[right]! - pcm[left]!) * (at - left));
  }
  return out;
}

/** 16-bit mono PCM at 22.05 kHz of one piece of text, spoken at `wordsPerMinute`. */
function render(text: string, voiceFile: string, wordsPerMinute: number): Int16Array {
  const { engine: speaker, voiceId } = meSpeak(voiceFile);
  const wav = speaker.speak(text, { voice: voiceId, rawdata: 'array', speed: wordsPerMinute });
  if (!wav) throw new Error('meSpeak rendered nothing.');
  const bytes = Buffer.from(wav instanceof Uint8Array ? wav : Uint8Array.from(wav as ArrayLike<number>));
  // meSpeak writes a canonical 44-byte header; find the data chunk all the same.
  let at = 12;
  while (at + 8 <= bytes.length && bytes.toString('latin1', at, at + 4) !== 'data')
    at += 8 + bytes.readUInt32LE(at + 4);
  const start = at + 8;
  const length = Math.floor((bytes.length - start) / 2);
  return new Int16Array(Buffer.from(bytes.subarray(start, start + length * 2)).buffer, 0, length);
}

/** Sentences (and, when a sentence is long, runs of words) of at most MAX_PIECE_CHARACTERS. */
export function splitForSpeech(text: string): string[] {
  const pieces: string[] = [];
  for (const sentence of text.split(/(?<=[.!?;:])\s+|\n+/)) {
    let piece = '';
    for (const word of sentence.split(/\s+/).filter(Boolean)) {
      if (piece && piece.length + 1 + word.length > MAX_PIECE_CHARACTERS) {
        pieces.push(piece);
        piece = '';
      }
      piece = piece ? `${piece} ${word}` : word.slice(0, MAX_PIECE_CHARACTERS);
    }
    if (piece) pieces.push(piece);
  }
  return pieces;
}
