import type { SpeechModelV3, TranscriptionModelV3 } from '@ai-sdk/provider';
import {
  ProviderError,
  type SpeechModel,
  type SpeechRequest,
  type TranscribeRequest,
  type TranscriptionModel,
  type TranscriptionResult,
  type VendorAdapterOptions,
} from '../provider';
import { openCallScope } from './call-scope';
import { classifyProviderError } from './classify-error';
import { withRetries } from './retry';

/**
 * The port's speech and transcription models over any AI SDK speech/transcription model, with the deadline,
 * retries and error classification of the language and embedding models. The AI SDK's interfaces take and
 * give whole files (SpeechModelV3 returns the audio at once, TranscriptionModelV3 takes a Uint8Array), so a
 * vendor's speech reaches the client in one piece, and an upload is read into memory for the vendor call only.
 */
export function createAiSdkSpeechModel(config: {
  options: VendorAdapterOptions;
  model: (modelId: string) => SpeechModelV3;
}): SpeechModel {
  const { options } = config;
  return {
    async synthesize(request: SpeechRequest) {
      const scope = openCallScope(request.signal, options.timeoutMs);
      const classify = (error: unknown) => classifyProviderError(error, { vendor: options.vendor, apiKey: options.apiKey, stopReason: scope.stopReason() });
      try {
        const model = config.model(request.model);
        const audio = await withRetries(
          async () => {
            const result = await model.doGenerate({ text: request.text, voice: request.voice, outputFormat: 'mp3', abortSignal: scope.signal });
            const bytes = typeof result.audio === 'string' ? Buffer.from(result.audio, 'base64') : Buffer.from(result.audio);
            if (bytes.length === 0) throw new ProviderError({ vendor: options.vendor, kind: 'malformed', message: `${options.vendor} returned no audio.` });
            scope.complete();
            return bytes;
          },
          { maxRetries: options.maxRetries, scope, classify },
        );
        return { mediaType: 'audio/mpeg' as const, audio: (async function* () {
          yield audio;
        })() };
      } catch (error) {
        throw classify(error);
      } finally {
        scope.close();
      }
    },
  };
}

export function createAiSdkTranscriptionModel(config: {
  options: VendorAdapterOptions;
  model: (modelId: string) => TranscriptionModelV3;
  /** The vendor's own options for a request (language, prompt, ...), under its provider key. */
  providerOptions?: (request: TranscribeRequest) => Record<string, Record<string, unknown>>;
}): TranscriptionModel {
  const { options } = config;
  return {
    async transcribe(request: TranscribeRequest): Promise<TranscriptionResult> {
      const scope = openCallScope(request.signal, options.timeoutMs);
      const classify = (error: unknown) => classifyProviderError(error, { vendor: options.vendor, apiKey: options.apiKey, stopReason: scope.stopReason() });
      try {
        const pieces: Buffer[] = [];
        for await (const piece of request.audio.read()) pieces.push(Buffer.from(piece));
        const audio = new Uint8Array(Buffer.concat(pieces));
        const model = config.model(request.model);
        return await withRetries(
          async () => {
            const result = await model.doGenerate({
              audio,
              mediaType: request.audio.mediaType,
              providerOptions: config.providerOptions?.(request) as never,
              abortSignal: scope.signal,
            });
            scope.complete();
            const segments = result.segments.map((segment) => ({ text: segment.text.trim(), start: segment.startSecond, end: segment.endSecond, speakerId: null }));
            // Billing needs the duration: a vendor that reports none is measured by its last segment's end.
            const durationSeconds = result.durationInSeconds ?? segments.reduce((end, segment) => Math.max(end, segment.end), 0);
            return { text: result.text, language: result.language ?? request.language ?? null, durationSeconds, segments };
          },
          { maxRetries: options.maxRetries, scope, classify },
        );
      } catch (error) {
        throw classify(error);
      } finally {
        scope.close();
      }
    },
  };
}
