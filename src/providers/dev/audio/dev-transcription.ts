import type { AudioInput, TranscribeRequest, TranscriptionModel, TranscriptionResult } from '../../provider';
import { mpg123Decoder } from './bundled-codecs';
import { id3TagSize, readUslt } from './id3';
import { mixDown, SpeechActivity } from './speech-activity';
import { InvalidAudioError, WavReader } from './wav-reader';

/**
 * dev-stt and dev-stt-async (DECISIONS.md 24): they really decode the upload (WAV and MP3), report its true
 * duration and the speech segments of an energy-based voice-activity pass, and take the words from the file's
 * ID3 `USLT` frame (what dev-tts writes) when it has one. No open-vocabulary recogniser can be installed here,
 * so without that frame the reply has no words and says so in `notice`. The file is read as a stream: memory
 * does not grow with its length. (The dev provider adds the `/delay MS` prompt directive in front of it.)
 */
export const NO_WORDS_NOTICE =
  'dev-stt does not recognise words: it decodes the audio and finds its speech segments, and takes the text only from an ID3 USLT frame (dev-tts writes one). Use a real transcription model for words.';

/** ISO 639-2 codes in USLT frames, for the ISO 639-1 `language` of the reply. */
const ISO_639_1: Readonly<Record<string, string>> = { eng: 'en', deu: 'de', ger: 'de', fra: 'fr', fre: 'fr', spa: 'es', ita: 'it', rus: 'ru', por: 'pt', nld: 'nl', dut: 'nl' };

const MAX_TAG_BYTES = 1 << 20;

export function createDevTranscriptionModel(fail: (message: string) => Error): TranscriptionModel {
  return {
    async transcribe(request: TranscribeRequest): Promise<TranscriptionResult> {
      const { audio } = request;
      if (audio.format !== 'wav' && audio.format !== 'mp3') {
        throw fail(`dev-stt decodes WAV and MP3 files only; this file is ${audio.format.toUpperCase()}.`);
      }
      let decoded: Decoded;
      try {
        decoded = audio.format === 'wav' ? await decodeWav(audio, request.signal) : await decodeMp3(audio, request.signal);
      } catch (error) {
        if (error instanceof InvalidAudioError) throw fail(error.message);
        throw error;
      }
      const segments = decoded.activity.segments();
      const duration = Math.round(decoded.activity.durationSeconds * 1000) / 1000;
      const words = decoded.transcript?.text.trim().split(/\s+/).filter(Boolean) ?? [];
      const texts = alignWords(words, segments);
      const language = request.language ?? (decoded.transcript ? (ISO_639_1[decoded.transcript.language.toLowerCase()] ?? null) : null);
      return {
        text: words.join(' '),
        language,
        durationSeconds: duration,
        segments: segments.map((segment, index) => ({ text: texts[index]!, start: segment.start, end: segment.end, speakerId: null })),
        ...(decoded.transcript ? {} : { notice: NO_WORDS_NOTICE }),
      };
    },
  };
}

interface Decoded {
  activity: SpeechActivity;
  transcript?: { text: string; language: string };
}

async function decodeWav(audio: AudioInput, signal?: AbortSignal): Promise<Decoded> {
  const reader = new WavReader();
  const activity = new SpeechActivity();
  for await (const piece of audio.read()) {
    signal?.throwIfAborted();
    const { samples, sampleRate } = reader.push(piece);
    if (samples.length > 0) activity.push(samples, sampleRate);
  }
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
    for await (const piece of audio.read()) {
      signal?.throwIfAborted();
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
      for (let at = 0; at < piece.length; at += 1 << 16) {
        const result = decoder.decode(piece.subarray(at, at + (1 << 16)));
        if (result.samplesDecoded > 0) {
          frames += 1;
          activity.push(mixDown(result.channelData, result.samplesDecoded), result.sampleRate);
        }
      }
    }
  } finally {
    decoder.free();
  }
  if (frames === 0) throw new InvalidAudioError('The file holds no MPEG audio frames that could be decoded.');
  return { activity, transcript };
}

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
