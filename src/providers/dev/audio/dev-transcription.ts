import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import {
  AUDIO_BOUNDS,
  id3TagSize,
  InvalidAudioError,
  isInvalidAudio,
  readFlacStreamInfo,
  readOggStreamInfo,
} from '../../../audio/audio-header';
import type { AudioInput, TranscribeRequest, TranscriptionModel, TranscriptionResult } from '../../provider';
import { flacDecoder, mpg123Decoder, oggVorbisDecoder } from './bundled-codecs';
import { readUslt } from './id3';
import { mixDown, SpeechActivity } from './speech-activity';
import { WavReader } from './wav-reader';

/**
 * dev-stt and dev-stt-async (api-decisions 24): they really decode the upload (WAV, MP3, FLAC, Ogg Vorbis), report its true
 * duration and the speech segments of an energy-based voice-activity pass, and take the words from the file's
 * ID3 `USLT` frame (what dev-tts writes) when it has one. No open-vocabulary recogniser can be installed here,
 * so without that frame the reply has no words and says so in `notice`. The file is read as a stream: memory
 * does not grow with its length. (The dev provider adds the `/delay MS` prompt directive in front of it.)
 *
 * Decoding runs on the event loop, like dev-tts's encoding: in slices of at most PIECE_BYTES, giving the loop back
 * whenever SLICE_MS have passed, so other requests never wait on it longer than that; the audio it will decode is
 * bounded by AUDIO_BOUNDS (the header's rate and channels, the duration). A file the decoder refuses is refused
 * the same way every time: the failure is the request's (bad_request), not one to retry.
 */
export const NO_WORDS_NOTICE =
  'dev-stt does not recognise words: it decodes the audio and finds its speech segments, and takes the text only from an ID3 USLT frame (dev-tts writes one). Use a real transcription model for words.';

/** ISO 639-2 codes in USLT frames, for the ISO 639-1 `language` of the reply. */
const ISO_639_1: Readonly<Record<string, string>> = {
  eng: 'en',
  deu: 'de',
  ger: 'de',
  fra: 'fr',
  fre: 'fr',
  spa: 'es',
  ita: 'it',
  rus: 'ru',
  por: 'pt',
  nld: 'nl',
  dut: 'nl',
};

const MAX_TAG_BYTES = 1 << 20;
/** The input decoded between two looks at the clock: a few milliseconds of work at most (8 kbit/s MP3: 8 s of audio). */
const PIECE_BYTES = 8 * 1024;
/** The longest the decoder keeps the event loop before giving it back. */
const SLICE_MS = 10;
/**
 * Files decoded at once by one process; the others wait their turn. Each decode gives the loop back every SLICE_MS,
 * but every one running takes its slice of each turn of the loop: without a cap, twenty uploads would make every
 * other request wait twenty slices.
 */
const CONCURRENT_DECODES = 2;

export function createDevTranscriptionModel(fail: (message: string) => Error): TranscriptionModel {
  const decodeSlot = slots(CONCURRENT_DECODES);
  return {
    async transcribe(request: TranscribeRequest): Promise<TranscriptionResult> {
      const { audio } = request;
      const decode = DECODERS[audio.format];
      if (!decode) {
        throw fail(
          `dev-stt decodes WAV, MP3, FLAC and Ogg Vorbis files only; this file is ${audio.format.toUpperCase()}.`,
        );
      }
      let decoded: Decoded;
      try {
        decoded = await decodeSlot(() => decode(audio, request.signal));
      } catch (error) {
        if (isInvalidAudio(error)) throw fail(error.message);
        throw error;
      }
      const segments = decoded.activity.segments();
      const duration = Math.round((decoded.durationSeconds ?? decoded.activity.durationSeconds) * 1000) / 1000;
      const words = decoded.transcript?.text.trim().split(/\s+/).filter(Boolean) ?? [];
      const texts = alignWords(words, segments);
      const language =
        request.language ??
        (decoded.transcript ? (ISO_639_1[decoded.transcript.language.toLowerCase()] ?? null) : null);
      return {
        text: words.join(' '),
        language,
        durationSeconds: duration,
        segments: segments.map((segment, index) => ({
          text: texts[index]!,
          start: segment.start,
          end: segment.end,
          speakerId: null,
        })),
        ...(decoded.transcript ? {} : { notice: NO_WORDS_NOTICE }),
      };
    },
  };
}

interface Decoded {
  activity: SpeechActivity;
  transcript?: { text: string; language: string };
  /** The audio's length when the file declares it exactly and the decoder may stop short of it (FLAC). */
  durationSeconds?: number;
}

type Decode = (audio: AudioInput, signal?: AbortSignal) => Promise<Decoded>;

/** Runs at most `count` of the works given to it at once, the others in the order they came. */
function slots(count: number): <T>(work: () => Promise<T>) => Promise<T> {
  let free = count;
  const waiting: Array<() => void> = [];
  return async (work) => {
    if (free > 0) free -= 1;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The slot passes to the next in line, or becomes free.
      const next = waiting.shift();
      if (next) next();
      else free += 1;
    }
  };
}

/** Gives the event loop back once SLICE_MS of work have passed since it last did. */
function timeSlicer(): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < SLICE_MS) return;
    await yieldToEventLoop();
    since = performance.now();
  };
}

/**
 * The upload in pieces of at most PIECE_BYTES, each handed to `decode` between slices of the event loop. What the
 * decoder throws is the file's fault (InvalidAudioError); what reading throws (a database read) is not, and passes.
 */
async function decodePieces(
  audio: AudioInput,
  activity: SpeechActivity,
  decode: (piece: Uint8Array) => void | Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const pause = timeSlicer();
  for await (const read of audio.read()) {
    for (let at = 0; at < read.length; at += PIECE_BYTES) {
      signal?.throwIfAborted();
      try {
        await decode(read.subarray(at, at + PIECE_BYTES));
      } catch (error) {
        if (isInvalidAudio(error)) throw error;
        throw new InvalidAudioError(`The file could not be decoded: ${(error as Error)?.message ?? String(error)}`);
      }
      if (activity.durationSeconds > AUDIO_BOUNDS.maxSeconds)
        throw new InvalidAudioError(`The audio lasts more than ${AUDIO_BOUNDS.maxSeconds / 3600} hours.`);
      await pause();
    }
  }
}

async function decodeWav(audio: AudioInput, signal?: AbortSignal): Promise<Decoded> {
  const reader = new WavReader();
  const activity = new SpeechActivity();
  await decodePieces(
    audio,
    activity,
    (piece) => {
      const { samples, sampleRate } = reader.push(piece);
      if (samples.length > 0) activity.push(samples, sampleRate);
    },
    signal,
  );
  reader.finish();
  return { activity };
}

async function decodeMp3(audio: AudioInput, signal?: AbortSignal): Promise<Decoded> {
  const decoder = new (mpg123Decoder().MPEGDecoder)();
  await decoder.ready;
  const activity = new SpeechActivity();
  let head: Buffer | undefined = Buffer.alloc(0);
  let transcript: Decoded['transcript'];
  let frames = 0;
  try {
    await decodePieces(
      audio,
      activity,
      (piece) => {
        if (head) {
          // The ID3 tag is at the start; it is read whole (up to 1 MiB) for its USLT frame.
          head = Buffer.concat([head, piece]);
          const size = id3TagSize(head);
          if (head.length >= 10 && (size === 0 || head.length >= size || head.length >= MAX_TAG_BYTES)) {
            if (size > 0) transcript = readUslt(head.subarray(0, Math.min(size, head.length)));
            head = undefined;
          }
        }
        // mpg123 skips ID3 tags itself, and keeps what it could not decode yet for the next piece.
        const result = decoder.decode(piece);
        if (result.samplesDecoded > 0) {
          frames += 1;
          activity.push(mixDown(result.channelData, result.samplesDecoded), result.sampleRate);
        }
      },
      signal,
    );
  } finally {
    decoder.free();
  }
  if (frames === 0) throw new InvalidAudioError('The file holds no MPEG audio frames that could be decoded.');
  return { activity, transcript };
}

/** The PCM of a wasm-audio-decoders result; one that decoded nothing carries no meaningful rate (nor data). */
interface DecodedPcm {
  channelData: Float32Array[];
  samplesDecoded: number;
  sampleRate: number;
  errors?: Array<{ message: string }>;
}

/**
 * FLAC and Ogg Vorbis, through the streaming WebAssembly decoders of wasm-audio-decoders: pieces in, PCM out as each
 * frame (page) completes, the rest at `flush`. `bound(samples, sampleRate)` is told the samples decoded so far, to
 * refuse audio longer than its header said.
 */
async function decodeStream(
  audio: AudioInput,
  decoder: {
    ready: Promise<void>;
    decode(data: Uint8Array): Promise<DecodedPcm>;
    flush(): Promise<DecodedPcm>;
    free(): void;
  },
  what: string,
  bound: (samples: number, sampleRate: number) => void,
  signal?: AbortSignal,
): Promise<{ activity: SpeechActivity; samples: number }> {
  await decoder.ready;
  const activity = new SpeechActivity();
  let samples = 0;
  const take = (result: DecodedPcm) => {
    if (result.errors?.length)
      throw new InvalidAudioError(`The ${what} file could not be decoded: ${result.errors[0]!.message}.`);
    if (result.samplesDecoded === 0) return;
    samples += result.samplesDecoded;
    bound(samples, result.sampleRate);
    activity.push(mixDown(result.channelData, result.samplesDecoded), result.sampleRate);
  };
  try {
    await decodePieces(audio, activity, async (piece) => take(await decoder.decode(piece)), signal);
    take(await decoder.flush());
  } finally {
    decoder.free();
  }
  if (samples === 0) throw new InvalidAudioError(`The file holds no ${what} audio that could be decoded.`);
  return { activity, samples };
}

/** The file's first bytes (its header), read on their own: `read()` can be read again. */
async function headOf(audio: AudioInput, bytes: number): Promise<Buffer> {
  const pieces: Buffer[] = [];
  let length = 0;
  for await (const piece of audio.read()) {
    pieces.push(Buffer.from(piece));
    length += piece.length;
    if (length >= bytes) break;
  }
  return Buffer.concat(pieces).subarray(0, bytes);
}

/**
 * A FLAC file: its STREAMINFO (checked as the upload's was) gives the exact length, which its frames must not exceed
 * by more than a block; the decoder may stop before the last, short frame, so the reported duration is the declared
 * one when there is one.
 */
async function decodeFlac(audio: AudioInput, signal?: AbortSignal): Promise<Decoded> {
  const info = readFlacStreamInfo(await headOf(audio, 42), true)!;
  const { activity } = await decodeStream(
    audio,
    new (flacDecoder().FLACDecoder)(),
    'FLAC',
    (samples) => {
      if (info.totalSamples > 0 && samples > info.totalSamples + info.maxBlockSize)
        throw new InvalidAudioError('The FLAC file holds more audio than its STREAMINFO declares.');
    },
    signal,
  );
  return info.totalSamples > 0 ? { activity, durationSeconds: info.totalSamples / info.sampleRate } : { activity };
}

/** An Ogg file: Vorbis is decoded; Opus (also Ogg, and common for voice notes) is refused by name. */
async function decodeOgg(audio: AudioInput, signal?: AbortSignal): Promise<Decoded> {
  const info = readOggStreamInfo(await headOf(audio, 64 * 1024), true)!;
  if (info.codec !== 'vorbis')
    throw new InvalidAudioError('dev-stt decodes Ogg Vorbis; this Ogg file is Opus. Use a real transcription model.');
  const { activity } = await decodeStream(
    audio,
    new (oggVorbisDecoder().OggVorbisDecoder)(),
    'Ogg Vorbis',
    () => {},
    signal,
  );
  return { activity };
}

const DECODERS: Partial<Record<AudioInput['format'], Decode>> = {
  wav: decodeWav,
  mp3: decodeMp3,
  flac: decodeFlac,
  ogg: decodeOgg,
};

/**
 * The USLT words spread over the speech segments in proportion to their durations: the dev model knows the
 * words and where speech is, not which word was said when. One segment gets every word.
 */
function alignWords(words: string[], segments: Array<{ start: number; end: number }>): string[] {
  if (segments.length === 0) return [];
  const total = segments.reduce((sum, segment) => sum + (segment.end - segment.start), 0);
  let taken = 0;
  let elapsed = 0;
  return segments.map((segment, index) => {
    elapsed += segment.end - segment.start;
    const upTo = index === segments.length - 1 ? words.length : Math.round((words.length * elapsed) / total);
    const text = words.slice(taken, upTo).join(' ');
    taken = Math.max(taken, upTo);
    return text;
  });
}
