import { createDeepgram } from '@ai-sdk/deepgram';
import type { TranscriptionSegment, VendorAdapterOptions, VendorProvider } from '../provider';
import { createAiSdkSpeechModel, createAiSdkTranscriptionModel } from '../shared/ai-sdk-audio-models';
import { definedOnly } from '../shared/provider-options';
import { rebasedFetch, vendorFetchFor } from '../shared/vendor-fetch';

/** The host @ai-sdk/deepgram addresses; the vendor's base URL setting replaces it. */
const DEEPGRAM_ORIGIN = 'https://api.deepgram.com';

/**
 * Deepgram: speech through `POST /v1/speak` (Aura; the voice is part of the model id, so a catalog model
 * `aura-2` with voice `thalia-en` calls `aura-2-thalia-en`) and pre-recorded transcription through
 * `POST /v1/listen` (the audio as the raw body). Transcripts are asked for with utterances, so segments
 * are the vendor's utterances with their speaker rather than the SDK's one segment per word.
 */
export function createDeepgramProvider(options: VendorAdapterOptions): VendorProvider {
  const deepgram = createDeepgram({
    apiKey: options.apiKey ?? '',
    fetch: rebasedFetch(vendorFetchFor(options), DEEPGRAM_ORIGIN, options.baseURL ?? DEEPGRAM_ORIGIN),
  });
  return {
    speechModel: createAiSdkSpeechModel({
      options,
      model: (modelId, voice) => deepgram.speech(`${modelId}-${voice}`),
      voiceParameter: false,
      speed: false,
    }),
    transcriptionModel: createAiSdkTranscriptionModel({
      options,
      model: (modelId) => deepgram.transcription(modelId),
      // Deepgram has no free-text prompt (its `keyterm` boosts single terms), so `prompt` is not sent.
      providerOptions: (request) => ({
        deepgram: {
          ...definedOnly({ language: request.language }),
          detectLanguage: request.language === undefined,
          punctuate: true,
          smartFormat: true,
          utterances: true,
        },
      }),
      segmentsFromBody: utteranceSegments,
    }),
  };
}

interface DeepgramUtterance {
  start: number;
  end: number;
  transcript: string;
  speaker?: number;
}

function utteranceSegments(body: unknown): TranscriptionSegment[] | undefined {
  const utterances = (body as { results?: { utterances?: DeepgramUtterance[] } } | undefined)?.results?.utterances;
  if (!Array.isArray(utterances)) return undefined;
  return utterances.map((utterance) => ({
    text: utterance.transcript.trim(),
    start: utterance.start,
    end: utterance.end,
    speakerId: typeof utterance.speaker === 'number' ? String(utterance.speaker) : null,
  }));
}
