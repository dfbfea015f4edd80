import { ProviderError, type TextStreamPart, type VendorProvider } from './provider';

/** How long a key that was refused (401/403) or rate limited (429) is left out, unless the vendor said longer. */
export const KEY_COOL_DOWN_MS = 30_000;

/**
 * A vendor with several keys (its key setting a comma-separated list, api-decisions 32): one adapter per key, and each
 * call goes to the next key in turn that is not cooling down. A key the vendor refuses (auth) or rate limits is cooled
 * down (for its Retry-After when longer) and the call moves to the next key at once, before any output; so does a
 * call that fails in a way the adapters retry (the next key is the retry). The last key available is called with the
 * request's usual retries. When every key is cooling down, the one whose cool-down ends first is tried.
 */
export function pooledProvider(
  members: VendorProvider[],
  options: { now?: () => number; coolDownMs?: number } = {},
): VendorProvider {
  const now = options.now ?? Date.now;
  const coolDownMs = options.coolDownMs ?? KEY_COOL_DOWN_MS;
  const coolingUntil = members.map(() => 0);
  let next = 0;

  /** The keys to try for one call, in order: those not cooling from the next in turn, then the first to cool off. */
  function order(): number[] {
    const start = next;
    next = (next + 1) % members.length;
    const rotated = members.map((_, offset) => (start + offset) % members.length);
    const ready = rotated.filter((index) => coolingUntil[index] <= now());
    if (ready.length > 0) return ready;
    return [rotated.reduce((best, index) => (coolingUntil[index] < coolingUntil[best] ? index : best))];
  }

  async function attempt<T>(call: (member: VendorProvider, maxRetries: number | undefined) => Promise<T>): Promise<T> {
    const keys = order();
    for (let position = 0; ; position += 1) {
      const index = keys[position];
      const last = position === keys.length - 1;
      try {
        return await call(members[index], last ? undefined : 0);
      } catch (error) {
        if (!ProviderError.isInstance(error)) throw error;
        if (error.kind === 'auth' || error.kind === 'rate_limit')
          coolingUntil[index] = now() + Math.max(coolDownMs, error.retryAfterMs ?? 0);
        const moveOn = error.kind === 'auth' || error.isRetryable;
        if (last || !moveOn) throw error;
      }
    }
  }

  const withRetries = <R extends { maxRetries?: number }>(request: R, maxRetries: number | undefined): R =>
    maxRetries === undefined ? request : { ...request, maxRetries };
  const [first] = members;
  return {
    languageModel: first.languageModel && {
      continuesReplies: first.languageModel.continuesReplies,
      generateText: (request) =>
        attempt((member, retries) => member.languageModel!.generateText(withRetries(request, retries))),
      async *streamText(request): AsyncGenerator<TextStreamPart> {
        // Before the first part only: after it, a failure is the stream's.
        const opened = await attempt(async (member, retries) => {
          const iterator = member.languageModel!.streamText(withRetries(request, retries))[Symbol.asyncIterator]();
          return { iterator, first: await iterator.next() };
        });
        const { iterator } = opened;
        try {
          for (let step = opened.first; !step.done; step = await iterator.next()) yield step.value;
        } finally {
          await iterator.return?.();
        }
      },
    },
    embeddingModel: first.embeddingModel && {
      embed: (request) => attempt((member, retries) => member.embeddingModel!.embed(withRetries(request, retries))),
    },
    speechModel: first.speechModel && {
      ...first.speechModel,
      synthesize: (request) =>
        attempt((member, retries) => member.speechModel!.synthesize(withRetries(request, retries))),
    },
    transcriptionModel: first.transcriptionModel && {
      transcribe: (request) =>
        attempt((member, retries) => member.transcriptionModel!.transcribe(withRetries(request, retries))),
    },
  };
}
