import { performance } from 'node:perf_hooks';
import type { FakeVendorServer } from '../fakes';
import {
  ProviderError,
  type GenerateTextRequest,
  type TextStreamPart,
  type VendorAdapterOptions,
  type VendorProvider,
} from '../../src/providers/provider';

/**
 * Behaviour every vendor adapter must show through its fake vendor: results, streaming, tool calls,
 * usage, finish reasons, retries, deadlines, cancellation and error classification. Each
 * `<vendor>-provider.test.ts` runs it and adds assertions on its own wire format.
 */
export interface AdapterContractConfig {
  vendor: string;
  apiKey: string;
  startFake: () => Promise<FakeVendorServer>;
  createProvider: (options: VendorAdapterOptions) => VendorProvider;
  model: string;
  /** Left out for vendors without embeddings. */
  embeddingModel?: string;
  /** Whether the vendor sends a request id header on errors. */
  sendsRequestId: boolean;
  /** Whether the vendor has in-stream error events (OpenAI, Anthropic; not Gemini). */
  hasStreamErrorEvents: boolean;
}

export interface StreamOutcome {
  parts: TextStreamPart[];
  error?: unknown;
}

export async function collect(stream: AsyncIterable<TextStreamPart>): Promise<StreamOutcome> {
  const parts: TextStreamPart[] = [];
  try {
    for await (const part of stream) parts.push(part);
    return { parts };
  } catch (error) {
    return { parts, error };
  }
}

export function textOf(parts: TextStreamPart[]): string {
  return parts.map((part) => (part.type === 'text-delta' ? part.text : '')).join('');
}

/** Awaits a promise expected to fail and returns its ProviderError (fails the test otherwise). */
export async function providerErrorOf(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!ProviderError.isInstance(error)) throw new Error(`expected a ProviderError, got ${String(error)}`);
  return error;
}

export const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city'],
    additionalProperties: false,
  },
};

export function describeAdapterContract(config: AdapterContractConfig): void {
  let fake: FakeVendorServer;
  const options = (overrides: Partial<VendorAdapterOptions> = {}): VendorAdapterOptions => ({
    vendor: config.vendor,
    apiKey: config.apiKey,
    baseURL: fake.baseURL,
    timeoutMs: 5_000,
    maxRetries: 2,
    ...overrides,
  });
  const languageModel = (overrides?: Partial<VendorAdapterOptions>) => {
    const model = config.createProvider(options(overrides)).languageModel;
    if (!model) throw new Error('adapter has no language model');
    return model;
  };
  const request = (extra: Partial<GenerateTextRequest> = {}): GenerateTextRequest => ({
    model: config.model,
    instructions: 'Be brief.',
    items: [{ type: 'message', role: 'user', text: 'Say hello.' }],
    ...extra,
  });

  beforeAll(async () => {
    fake = await config.startFake();
  });
  afterAll(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.setDefault({});
  });

  describe(`${config.vendor} adapter contract`, () => {
    it('generates text with usage and finish reason', async () => {
      fake.script({ text: 'Hello there, friend.', usage: { inputTokens: 21, outputTokens: 5 } });
      const result = await languageModel().generateText(request());
      expect(result).toEqual({
        text: 'Hello there, friend.',
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: 21, outputTokens: 5 },
      });
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]!.stream).toBe(false);
    });

    it('streams text deltas in order and one finish part last', async () => {
      fake.script({ textChunks: ['Hel', 'lo', ' wor', 'ld'], usage: { inputTokens: 9, outputTokens: 4 } });
      const { parts, error } = await collect(languageModel().streamText(request()));
      expect(error).toBeUndefined();
      expect(parts).toEqual([
        { type: 'text-delta', text: 'Hel' },
        { type: 'text-delta', text: 'lo' },
        { type: 'text-delta', text: ' wor' },
        { type: 'text-delta', text: 'ld' },
        { type: 'finish', finishReason: 'stop', usage: { inputTokens: 9, outputTokens: 4 } },
      ]);
      expect(fake.requests[0]!.stream).toBe(true);
    });

    it('reports a length finish when the output was cut, generating and streaming', async () => {
      fake.script(
        { text: 'It was the best of', finishReason: 'length' },
        { text: 'It was the best of', finishReason: 'length' },
      );
      const model = languageModel();
      const generated = await model.generateText(request({ maxOutputTokens: 5 }));
      expect(generated.finishReason).toBe('length');
      const { parts } = await collect(model.streamText(request({ maxOutputTokens: 5 })));
      expect(textOf(parts)).toBe('It was the best of');
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' });
    });

    it('returns tool calls with JSON arguments, generating and streaming', async () => {
      const call = { name: 'get_weather', arguments: { city: 'Oslo', unit: 'c' }, callId: 'call_w1' };
      fake.script({ toolCalls: [call] }, { toolCalls: [call] });
      const model = languageModel();
      const generated = await model.generateText(request({ tools: [WEATHER_TOOL] }));
      expect(generated.finishReason).toBe('tool_calls');
      expect(generated.toolCalls).toHaveLength(1);
      expect(generated.toolCalls[0]).toMatchObject({ name: 'get_weather' });
      expect(JSON.parse(generated.toolCalls[0]!.arguments)).toEqual({ city: 'Oslo', unit: 'c' });
      expect(generated.toolCalls[0]!.callId).not.toBe('');

      const { parts, error } = await collect(model.streamText(request({ tools: [WEATHER_TOOL] })));
      expect(error).toBeUndefined();
      const toolParts = parts.filter((part) => part.type === 'tool-call');
      expect(toolParts).toHaveLength(1);
      expect(toolParts[0]).toMatchObject({ type: 'tool-call', name: 'get_weather' });
      expect(JSON.parse((toolParts[0] as { arguments: string }).arguments)).toEqual({ city: 'Oslo', unit: 'c' });
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool_calls' });
      expect(parts.filter((part) => part.type === 'finish')).toHaveLength(1);
    });

    if (config.embeddingModel) {
      it('embeds text', async () => {
        fake.script({ embedding: [0.25, -0.5, 0.75], usage: { inputTokens: 4, outputTokens: 0 } });
        const embedder = config.createProvider(options()).embeddingModel!;
        const result = await embedder.embed({ model: config.embeddingModel!, input: 'the quick brown fox' });
        expect(result.embedding).toEqual([0.25, -0.5, 0.75]);
        expect(result.usage.inputTokens).toBeGreaterThanOrEqual(0);
        expect(fake.requests).toHaveLength(1);
      });

      it('retries an embedding after a 503 and classifies a 401', async () => {
        fake.script({ status: 503 }, { embedding: [1, 0] }, { status: 401 });
        const embedder = config.createProvider(options()).embeddingModel!;
        expect((await embedder.embed({ model: config.embeddingModel!, input: 'x' })).embedding).toEqual([1, 0]);
        const error = await providerErrorOf(embedder.embed({ model: config.embeddingModel!, input: 'x' }));
        expect(error.kind).toBe('auth');
        expect(fake.requests).toHaveLength(3);
      });
    } else {
      it('offers no embedding model', () => {
        expect(config.createProvider(options()).embeddingModel).toBeUndefined();
      });
    }

    it('answers after a delay that is within the timeout', async () => {
      fake.script({ delayMs: 300, text: 'late but fine' });
      const result = await languageModel({ timeoutMs: 3_000 }).generateText(request());
      expect(result.text).toBe('late but fine');
    });

    it('retries a 429 after the Retry-After the vendor asked for', async () => {
      fake.script({ status: 429, retryAfter: '1' }, { text: 'after the pause' });
      const result = await languageModel().generateText(request());
      expect(result.text).toBe('after the pause');
      expect(fake.requests).toHaveLength(2);
      const gap = fake.requests[1]!.receivedAt - fake.requests[0]!.receivedAt;
      expect(gap).toBeGreaterThanOrEqual(990);
      expect(gap).toBeLessThan(3_000);
    });

    it('retries a 500 and a dropped connection, streaming, before any output', async () => {
      fake.script({ status: 500 }, { resetConnection: true }, { textChunks: ['fine', ' now'] });
      const { parts, error } = await collect(languageModel().streamText(request()));
      expect(error).toBeUndefined();
      expect(textOf(parts)).toBe('fine now');
      expect(fake.requests).toHaveLength(3);
    });

    it('gives up with kind server after maxRetries retries of a 500', async () => {
      fake.setDefault({ status: 500 });
      const error = await providerErrorOf(languageModel({ maxRetries: 2 }).generateText(request()));
      expect(error.kind).toBe('server');
      expect(error.status).toBe(500);
      expect(error.vendor).toBe(config.vendor);
      expect(error.isRetryable).toBe(true);
      expect(error.message).toContain(config.vendor);
      expect(error.message).toContain('500');
      if (config.sendsRequestId) expect(error.vendorRequestId).toMatch(/^req_/);
      expect(fake.requests).toHaveLength(3);
    });

    it('classifies a 401 as auth, without retrying or repeating the key', async () => {
      fake.script({ status: 401 });
      const error = await providerErrorOf(languageModel().generateText(request()));
      expect(error.kind).toBe('auth');
      expect(error.status).toBe(401);
      expect(error.message).toContain(config.vendor);
      expect(error.message).toContain('401');
      expect(error.message).not.toContain(config.apiKey);
      expect(JSON.stringify(error)).not.toContain(config.apiKey);
      expect(String(error.cause ?? '')).not.toContain(config.apiKey);
      expect(fake.requests).toHaveLength(1);
    });

    it('classifies 400 as bad_request (quoting the vendor) and 404 as not_found, without retrying', async () => {
      fake.script({ status: 400, errorMessage: 'context too long for this model' }, { status: 404 });
      const model = languageModel();
      const badRequest = await providerErrorOf(model.generateText(request()));
      expect(badRequest.kind).toBe('bad_request');
      expect(badRequest.message).toContain('context too long for this model');
      const notFound = await providerErrorOf(model.generateText(request()));
      expect(notFound.kind).toBe('not_found');
      expect(fake.requests).toHaveLength(2);
    });

    it('cancels a hanging call at once when the caller aborts, and the vendor sees the connection close', async () => {
      fake.script({ hang: true });
      const controller = new AbortController();
      const pending = providerErrorOf(
        languageModel({ timeoutMs: 10_000 }).generateText(request({ signal: controller.signal })),
      );
      await fake.waitForRequests(1);
      const abortedAt = performance.now();
      controller.abort();
      const error = await pending;
      expect(performance.now() - abortedAt).toBeLessThan(500);
      expect(error.kind).toBe('cancelled');
      await fake.waitForClientAbort(0, 2_000);
      expect(fake.requests).toHaveLength(1);
    });

    it('cancels a stalled stream when the caller aborts, keeping the deltas already yielded', async () => {
      fake.script({ textChunks: ['first', ' second'], hangAfterDeltas: 1 });
      const controller = new AbortController();
      const parts: TextStreamPart[] = [];
      const iterate = async () => {
        for await (const part of languageModel({ timeoutMs: 10_000 }).streamText(
          request({ signal: controller.signal }),
        )) {
          parts.push(part);
          if (parts.length === 1) controller.abort();
        }
      };
      const error = await providerErrorOf(iterate());
      expect(error.kind).toBe('cancelled');
      expect(parts).toEqual([{ type: 'text-delta', text: 'first' }]);
      await fake.waitForClientAbort(0, 2_000);
      expect(fake.requests).toHaveLength(1);
    });

    it('closes the upstream stream when the consumer stops iterating', async () => {
      fake.script({ textChunks: ['one', ' two'], hangAfterDeltas: 1 });
      for await (const part of languageModel().streamText(request())) {
        expect(part).toEqual({ type: 'text-delta', text: 'one' });
        break;
      }
      await fake.waitForClientAbort(0, 2_000);
    });

    it('times out a hanging call with kind timeout and closes the connection', async () => {
      fake.setDefault({ hang: true });
      const startedAt = performance.now();
      const error = await providerErrorOf(languageModel({ timeoutMs: 400, maxRetries: 2 }).generateText(request()));
      const elapsed = performance.now() - startedAt;
      expect(error.kind).toBe('timeout');
      expect(error.message).toContain(config.vendor);
      expect(elapsed).toBeGreaterThanOrEqual(390);
      expect(elapsed).toBeLessThan(1_500);
      // The deadline covers the whole call: no retry is started after it.
      expect(fake.requests).toHaveLength(1);
      await fake.waitForClientAbort(0, 2_000);
    });

    it('times out a hanging stream with kind timeout', async () => {
      fake.script({ hang: true });
      const { parts, error } = await collect(languageModel({ timeoutMs: 300 }).streamText(request()));
      expect(parts).toEqual([]);
      expect(ProviderError.isInstance(error) && error.kind).toBe('timeout');
      await fake.waitForClientAbort(0, 2_000);
    });

    it('classifies malformed SSE as malformed, without retrying', async () => {
      fake.script({ malformedSse: true });
      const { error } = await collect(languageModel().streamText(request()));
      expect(ProviderError.isInstance(error) && error.kind).toBe('malformed');
      expect((error as Error).message).toContain(config.vendor);
      expect(fake.requests).toHaveLength(1);
    });

    it('classifies an unparsable JSON body as malformed', async () => {
      fake.script({ malformedBody: true });
      const error = await providerErrorOf(languageModel().generateText(request()));
      expect(error.kind).toBe('malformed');
      expect(fake.requests).toHaveLength(1);
    });

    if (config.hasStreamErrorEvents) {
      it('retries an in-stream error event that came before any output', async () => {
        fake.script({ errorEventAfterDeltas: 0 }, { textChunks: ['second', ' try'] });
        const { parts, error } = await collect(languageModel().streamText(request()));
        expect(error).toBeUndefined();
        expect(textOf(parts)).toBe('second try');
        expect(fake.requests).toHaveLength(2);
      });

      it('throws an in-stream error event after output as kind server, keeping the deltas', async () => {
        fake.script({ textChunks: ['partial', ' answer'], errorEventAfterDeltas: 1 });
        const { parts, error } = await collect(languageModel().streamText(request()));
        expect(parts).toEqual([{ type: 'text-delta', text: 'partial' }]);
        expect(ProviderError.isInstance(error) && error.kind).toBe('server');
        expect((error as Error).message).toContain(config.vendor);
        expect(fake.requests).toHaveLength(1);
      });
    }

    it('throws when the connection drops mid-stream after a delta, keeping that delta and not retrying', async () => {
      fake.script({ textChunks: ['kept', ' lost', ' too'], dropAfterDeltas: 1 });
      const { parts, error } = await collect(languageModel({ maxRetries: 3 }).streamText(request()));
      expect(parts).toEqual([{ type: 'text-delta', text: 'kept' }]);
      expect(ProviderError.isInstance(error) && error.kind).toBe('network');
      expect(fake.requests).toHaveLength(1);
    });
  });
}
