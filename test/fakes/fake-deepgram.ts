import { randomUUID } from 'node:crypto';
import type { RecordedRequest } from './fake-script';
import {
  startFakeVendorServer,
  type FakeServerOptions,
  type FakeVendorServer,
  type ResolvedStep,
  type VendorProtocol,
} from './fake-vendor-server';

/**
 * Deepgram on loopback: `POST /v1/speak?model=…&encoding=mp3` (JSON `{text}` in, MP3 bytes out) and
 * `POST /v1/listen?model=…` (the audio as the raw body, `Authorization: Token …`; the pre-recorded reply
 * with metadata.duration, one channel's transcript and words, and `results.utterances` when
 * `utterances=true`: the step's text spoken by speaker 0 then speaker 1). Errors are Deepgram's own
 * `{err_code, err_msg, request_id}`. Shapes follow the API reference.
 */

/** What the fake's speak endpoint answers: an MPEG-1 Layer III frame header and padding. */
export const FAKE_DEEPGRAM_MP3 = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x44]), Buffer.alloc(313, 0x33)]);

/** The audio duration the fake reports. */
export const FAKE_DEEPGRAM_DURATION = 5.5;

export function startFakeDeepgram(options?: FakeServerOptions): Promise<FakeVendorServer> {
  return startFakeVendorServer(deepgramProtocol, options);
}

const deepgramProtocol: VendorProtocol = {
  basePath: '',
  requestIdHeader: 'dg-request-id',
  openingEvents: 0,
  isStream: () => false,
  reply(request, step) {
    if (request.method !== 'POST') return undefined;
    switch (request.path) {
      case '/v1/speak':
        return { kind: 'binary', contentType: 'audio/mpeg', body: FAKE_DEEPGRAM_MP3 };
      case '/v1/listen':
        return { kind: 'json', body: listenReply(request, step) };
      default:
        return undefined;
    }
  },
  errorBody(status, message) {
    const [code, defaultMessage] = deepgramError(status);
    return { err_code: code, err_msg: message ?? defaultMessage, request_id: randomUUID() };
  },
};

function listenReply(request: RecordedRequest, step: ResolvedStep) {
  const transcript = step.text ?? 'Hello from the fake vendor.';
  const spoken = transcript.split(/\s+/).filter(Boolean);
  // Words evenly over 0.5 s .. 5.0 s; the first half by speaker 0, the rest by speaker 1.
  const span = 4.5 / Math.max(1, spoken.length);
  const words = spoken.map((word, index) => ({
    word: word.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ''),
    start: round(0.5 + index * span),
    end: round(0.5 + (index + 1) * span),
    confidence: 0.98,
    speaker: index < Math.ceil(spoken.length / 2) ? 0 : 1,
    speaker_confidence: 0.9,
    punctuated_word: word,
  }));
  const utterance = (speaker: number) => {
    const own = words.filter((word) => word.speaker === speaker);
    if (own.length === 0) return [];
    return [
      {
        start: own[0]!.start,
        end: own.at(-1)!.end,
        confidence: 0.97,
        channel: 0,
        transcript: own.map((word) => word.punctuated_word).join(' '),
        words: own,
        speaker,
        id: randomUUID(),
      },
    ];
  };
  return {
    metadata: {
      transaction_key: 'deprecated',
      request_id: randomUUID(),
      sha256: '0'.repeat(64),
      created: new Date().toISOString(),
      duration: FAKE_DEEPGRAM_DURATION,
      channels: 1,
      models: [randomUUID()],
      model_info: {},
    },
    results: {
      channels: [
        {
          ...(request.query.detect_language === 'true' ? { detected_language: 'en', language_confidence: 0.99 } : {}),
          alternatives: [{ transcript, confidence: 0.97, words }],
        },
      ],
      ...(request.query.utterances === 'true' ? { utterances: [...utterance(0), ...utterance(1)] } : {}),
    },
  };
}

function deepgramError(status: number): [string, string] {
  switch (status) {
    case 400:
      return ['Bad Request', 'Bad Request: failed to process audio: corrupt or unsupported data'];
    case 401:
      return ['INVALID_AUTH', 'Invalid credentials.'];
    case 402:
      return ['ASR_PAYMENT_REQUIRED', 'Project does not have enough credits for an ASR request.'];
    case 429:
      return ['TOO_MANY_REQUESTS', 'Too many requests. Please try again later.'];
    default:
      return ['INTERNAL_SERVER_ERROR', 'An internal server error occurred.'];
  }
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;
