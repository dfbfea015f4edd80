import { ProviderError, type TextStreamPart, type VendorProvider } from './provider';

/** One finished vendor call, as metrics and the debug log see it. */
export interface VendorCallRecord {
  vendor: string;
  kind: 'language' | 'embedding' | 'speech' | 'transcription';
  /** The vendor's model id. */
  model: string;
  /** `ok`, or the ProviderError kind (`unexpected` for anything else). */
  outcome: string;
  seconds: number;
  /** Streamed language calls: time to the first text or tool call. */
  firstTokenSeconds?: number;
  /** A vendor with several keys: which one made the call (`#1`, `#2`, ...; never the key itself). */
  key?: string;
}

export type VendorCallObserver = (record: VendorCallRecord) => void;

/**
 * The provider with every call timed and reported to `observe` when it ends (a stream: when it is read to its
 * end, fails, or its reader stops). A decorator over the port, so the adapters know nothing of it.
 */
export function observeProvider(
  provider: VendorProvider,
  vendor: string,
  observeCall: VendorCallObserver,
  key?: string,
): VendorProvider {
  const observe: VendorCallObserver = key ? (record) => observeCall({ ...record, key }) : observeCall;
  const since = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e9;
  const outcomeOf = (error: unknown) => (ProviderError.isInstance(error) ? error.kind : 'unexpected');

  function timed<Request extends { model: string }, Result>(
    kind: VendorCallRecord['kind'],
    call: (request: Request) => Promise<Result>,
  ) {
    return async (request: Request): Promise<Result> => {
      const started = process.hrtime.bigint();
      try {
        const result = await call(request);
        observe({ vendor, kind, model: request.model, outcome: 'ok', seconds: since(started) });
        return result;
      } catch (error) {
        observe({ vendor, kind, model: request.model, outcome: outcomeOf(error), seconds: since(started) });
        throw error;
      }
    };
  }

  const { languageModel, embeddingModel, speechModel, transcriptionModel } = provider;
  return {
    languageModel: languageModel && {
      continuesReplies: languageModel.continuesReplies,
      serverTools: languageModel.serverTools,
      generateText: timed('language', (request) => languageModel.generateText(request)),
      async *streamText(request): AsyncGenerator<TextStreamPart> {
        const started = process.hrtime.bigint();
        let firstTokenSeconds: number | undefined;
        let outcome = 'cancelled';
        try {
          for await (const part of languageModel.streamText(request)) {
            if (firstTokenSeconds === undefined && part.type !== 'finish') firstTokenSeconds = since(started);
            if (part.type === 'finish') outcome = 'ok';
            yield part;
          }
        } catch (error) {
          outcome = outcomeOf(error);
          throw error;
        } finally {
          observe({
            vendor,
            kind: 'language',
            model: request.model,
            outcome,
            seconds: since(started),
            firstTokenSeconds,
          });
        }
      },
    },
    embeddingModel: embeddingModel && { embed: timed('embedding', (request) => embeddingModel.embed(request)) },
    speechModel: speechModel && {
      ...speechModel,
      synthesize: timed('speech', (request) => speechModel.synthesize(request)),
    },
    transcriptionModel: transcriptionModel && {
      transcribe: timed('transcription', (request) => transcriptionModel.transcribe(request)),
    },
  };
}
