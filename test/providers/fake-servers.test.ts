import { startFakeAnthropic, startFakeGemini, startFakeOpenAI, type FakeVendorServer } from '../fakes';
import { createAnthropicProvider } from '../../src/providers/anthropic/anthropic-provider';
import { createGoogleProvider } from '../../src/providers/google/google-provider';
import { createOpenAICompatibleProvider } from '../../src/providers/openai-compatible/openai-compatible-provider';
import { createOpenAIProvider } from '../../src/providers/openai/openai-provider';
import type { GenerateTextRequest, VendorAdapterOptions } from '../../src/providers/provider';
import { collect } from './adapter-contract';

/** The fakes themselves: their raw wire format (what other suites rely on) and the zero-latency mode. */

const hello: GenerateTextRequest = { model: 'm', items: [{ type: 'message', role: 'user', text: 'hi' }] };

async function post(url: string, body: unknown): Promise<{ status: number; contentType: string; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    text: await response.text(),
  };
}

function dataLines(sse: string): string[] {
  return sse
    .split(/\r?\n/)
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6));
}

describe('fake vendor wire formats', () => {
  let openai: FakeVendorServer;
  let anthropic: FakeVendorServer;
  let gemini: FakeVendorServer;
  beforeAll(async () => {
    [openai, anthropic, gemini] = await Promise.all([startFakeOpenAI(), startFakeAnthropic(), startFakeGemini()]);
  });
  afterAll(async () => {
    await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
  });

  it('OpenAI Responses streams named events from response.created to response.completed', async () => {
    openai.script({ textChunks: ['Hi', '!'] });
    const { contentType, text } = await post(`${openai.baseURL}/responses`, {
      model: 'gpt-4.1',
      input: 'hi',
      stream: true,
    });
    expect(contentType).toBe('text/event-stream');
    const events = [...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1]);
    expect(events).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const completed = JSON.parse(dataLines(text).at(-1)!);
    expect(completed.response.usage).toMatchObject({ input_tokens: 12, output_tokens: 7 });
  });

  it('OpenAI Chat Completions sends a usage chunk only when include_usage is asked, and ends with [DONE]', async () => {
    openai.script({ text: 'a b' }, { text: 'a b' });
    const without = dataLines(
      (await post(`${openai.baseURL}/chat/completions`, { model: 'x', messages: [], stream: true })).text,
    );
    expect(without.at(-1)).toBe('[DONE]');
    expect(
      without
        .slice(0, -1)
        .map((line) => JSON.parse(line))
        .some((chunk) => chunk.usage),
    ).toBe(false);
    const withUsage = dataLines(
      (
        await post(`${openai.baseURL}/chat/completions`, {
          model: 'x',
          messages: [],
          stream: true,
          stream_options: { include_usage: true },
        })
      ).text,
    );
    expect(JSON.parse(withUsage.at(-2)!)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 12, completion_tokens: 7 },
    });
  });

  it('Anthropic streams the Messages event sequence and answers errors in its envelope with a request-id', async () => {
    anthropic.script({ text: 'Hi' }, { status: 429, retryAfter: '7' });
    const { text } = await post(`${anthropic.baseURL}/messages`, {
      model: 'claude',
      messages: [],
      max_tokens: 10,
      stream: true,
    });
    expect([...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1])).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const response = await fetch(`${anthropic.baseURL}/messages`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.any(String) },
    });
  });

  it('Gemini streams whole GenerateContentResponses separated by CRLF, and 404s unknown paths', async () => {
    gemini.script({ textChunks: ['a', 'b'] });
    const { text } = await post(`${gemini.baseURL}/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
      contents: [],
    });
    expect(text).toContain('\r\n\r\n');
    const chunks = dataLines(text).map((line) => JSON.parse(line));
    expect(chunks).toHaveLength(2);
    expect(chunks[1]).toMatchObject({
      candidates: [{ finishReason: 'STOP' }],
      usageMetadata: { candidatesTokenCount: 7 },
    });
    const missing = await post(`${gemini.baseURL}/models/x:unknownMethod`, {});
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text)).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
  });
});

describe('zero-latency fakes', () => {
  const options = (vendor: string, fake: FakeVendorServer): VendorAdapterOptions => ({
    vendor,
    apiKey: 'k',
    baseURL: fake.baseURL,
    timeoutMs: 5_000,
    maxRetries: 0,
  });

  it('serve a fixed reply to every adapter without recording requests', async () => {
    const [openai, anthropic, gemini] = await Promise.all([
      startFakeOpenAI({ zeroLatency: true }),
      startFakeAnthropic({ zeroLatency: true }),
      startFakeGemini({ zeroLatency: true }),
    ]);
    try {
      // Scripts are ignored in this mode.
      openai.script({ status: 500 });
      const providers = [
        createOpenAIProvider(options('openai', openai)),
        createOpenAICompatibleProvider(options('compatible', openai)),
        createAnthropicProvider(options('anthropic', anthropic)),
        createGoogleProvider(options('google', gemini)),
      ];
      for (const provider of providers) {
        for (let round = 0; round < 3; round += 1) {
          expect(await provider.languageModel!.generateText(hello)).toMatchObject({ text: 'ok', finishReason: 'stop' });
          const { parts, error } = await collect(provider.languageModel!.streamText(hello));
          expect(error).toBeUndefined();
          expect(parts).toEqual([
            { type: 'text-delta', text: 'ok' },
            { type: 'finish', finishReason: 'stop', usage: { inputTokens: 5, outputTokens: 1 } },
          ]);
        }
        if (provider.embeddingModel) {
          expect((await provider.embeddingModel.embed({ model: 'e', input: 'x' })).embedding.length).toBeGreaterThan(0);
        }
      }
      expect(openai.requests).toHaveLength(0);
      expect(openai.requestCount).toBe(2 * 6 + 2);
      expect(anthropic.requestCount).toBe(6);
      expect(gemini.requestCount).toBe(7);
    } finally {
      await Promise.all([openai.close(), anthropic.close(), gemini.close()]);
    }
  });
});
