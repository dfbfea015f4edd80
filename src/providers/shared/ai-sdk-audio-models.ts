import type { SpeechModelV3, TranscriptionModelV3 } from '@ai-sdk/provider';
import {
  ProviderError,
  SPEECH_FORMATS,
  type SpeechModel,
  type SpeechRequest,
  type TranscribeRequest,
  type TranscriptionModel,
  type TranscriptionResult,
  type TranscriptionSegment,
  type VendorAdapterOptions,
} from '../provider';
import { callVendor } from './vendor-call';

/**
 * The port's speech and transcription models over any AI SDK speech/transcription model, with the deadline,
 * retries and error classification of the language and embedding models. The AI SDK's interfaces take and
 * give whole files (SpeechModelV3 returns the audio at once, TranscriptionModelV3 takes a Uint8Array), so a
 * vendor's speech reaches the client in one piece, and an upload is read into memory for the vendor call only.
 */
export function createAiSdkSpeechModel(config: {
  options: VendorAdapterOptions;
  /** The vendor's model for a catalog model id and voice (Deepgram names the voice in the model id). */
  model: (modelId: string, voice: string) => SpeechModelV3;
  /** Whether the vendor takes the voice as a parameter (false: it is part of the model id). */
  voiceParameter?: boolean;
  /** Whether the vendor can change the speaking speed (false: a speed other than 1 is refused). */
  speed?: boolean;
}): SpeechModel {
  const { options } = config;
  return {
    async synthesize(request: SpeechRequest) {
      const format = request.format ?? 'mp3';
      if (config.speed === false && request.speed !== undefined && request.speed !== 1) {
        throw new ProviderError({
          vendor: options.vendor,
          kind: 'bad_request',
          message: `${options.vendor} speech has no speed setting; send speed 1 or none.`,
        });
      }
      const audio = await callVendor(options, request, async (abortSignal) => {
        const result = await config.model(request.model, request.voice).doGenerate({
          text: request.text,
          voice: config.voiceParameter === false ? undefined : request.voice,
          outputFormat: format,
          speed: request.speed,
          abortSignal,
        });
        const bytes =
          typeof result.audio === 'string' ? Buffer.from(result.audio, 'base64') : Buffer.from(result.audio);
        if (bytes.length === 0)
          throw new ProviderError({
            vendor: options.vendor,
            kind: 'malformed',
            message: `${options.vendor} returned no audio.`,
          });
        return bytes;
      });
      return {
        mediaType: SPEECH_FORMATS[format],
        audio: (async function* () {
          yield audio;
        })(),
      };
    },
  };
}

export function createAiSdkTranscriptionModel(config: {
  options: VendorAdapterOptions;
  model: (modelId: string) => TranscriptionModelV3;
  /** The vendor's own options for a request (language, prompt, ...), under its provider key. */
  providerOptions?: (request: TranscribeRequest) => Record<string, Record<string, unknown>>;
  /**
   * Segments read from the vendor's raw reply where the SDK's own are too fine (Deepgram's SDK maps every
   * word to a segment and drops the speaker; its `utterances` carry both). Undefined: the SDK's segments.
   */
  segmentsFromBody?: (body: unknown) => TranscriptionSegment[] | undefined;
}): TranscriptionModel {
  const { options } = config;
  return {
    async transcribe(request: TranscribeRequest): Promise<TranscriptionResult> {
      const pieces: Buffer[] = [];
      for await (const piece of request.audio.read()) pieces.push(Buffer.from(piece));
      const audio = new Uint8Array(Buffer.concat(pieces));
      return callVendor(options, request, async (abortSignal) => {
        const result = await config.model(request.model).doGenerate({
          audio,
          mediaType: request.audio.mediaType,
          providerOptions: config.providerOptions?.(request) as never,
          abortSignal,
        });
        const segments =
          config.segmentsFromBody?.(result.response.body) ??
          result.segments.map((segment) => ({
            text: segment.text.trim(),
            start: segment.startSecond,
            end: segment.endSecond,
            speakerId: null,
          }));
        // Billing needs the duration: a vendor that reports none is measured by its last segment's end.
        const durationSeconds =
          result.durationInSeconds ?? segments.reduce((end, segment) => Math.max(end, segment.end), 0);
        return { text: result.text, language: result.language ?? request.language ?? null, durationSeconds, segments };
      });
    },
  };
}
