import path from 'node:path';
import { loadCatalogFile } from '../../src/catalog/catalog.loader';
import { catalogFromDefinition } from '../../src/catalog/catalog.service';
import { createProviderRegistry } from '../../src/providers/registry';
import { startFakeOpenAI } from '../fakes/fake-openai';
import type { FakeVendorServer } from '../fakes/fake-vendor-server';

/** The registry over the shipped catalog, vendors pointed at a loopback fake through their *_BASE_URL settings. */
describe('provider registry', () => {
  const definition = loadCatalogFile(path.join(__dirname, '../../catalog.yaml'));
  let fake: FakeVendorServer;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  function registryWith(settings: Record<string, string>) {
    const catalog = catalogFromDefinition(definition, settings);
    return createProviderRegistry({ catalog, settings: { timeoutMs: 5000, maxRetries: 0, settings } });
  }

  it('hands a configured vendor its key and base URL from the settings named in the catalog', async () => {
    const registry = registryWith({ OPENAI_API_KEY: 'sk-registry-test', OPENAI_BASE_URL: fake.baseURL });
    const result = await registry
      .languageModel('openai')
      .generateText({ model: 'gpt-4.1-mini', items: [{ type: 'message', role: 'user', text: 'hi' }] });
    expect(result.text).toBe('Hello from the fake vendor.');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].headers.authorization).toBe('Bearer sk-registry-test');
    expect(fake.requests[0].body.model).toBe('gpt-4.1-mini');
    const embedding = await registry
      .embeddingModel('openai')
      .embed({ model: 'text-embedding-3-small', input: 'hello' });
    expect(embedding.embedding.length).toBeGreaterThan(0);
    expect(fake.requests[1].path).toBe('/v1/embeddings');
  });

  it('reaches a keyless local vendor (ollama) by its base URL alone, without an Authorization header', async () => {
    const registry = registryWith({ OLLAMA_BASE_URL: fake.baseURL });
    const result = await registry
      .languageModel('ollama')
      .generateText({ model: 'llama3.1:8b', items: [{ type: 'message', role: 'user', text: 'hi' }] });
    expect(result.text).toBe('Hello from the fake vendor.');
    expect(fake.requests[0].path).toBe('/v1/chat/completions');
    expect(fake.requests[0].body.model).toBe('llama3.1:8b');
    expect(fake.requests[0].headers.authorization).toBeUndefined();
  });

  it('creates each vendor adapter once, on first use', () => {
    const registry = registryWith({ OPENAI_API_KEY: 'sk-a', ANTHROPIC_API_KEY: 'sk-b' });
    expect(registry.languageModel('openai')).toBe(registry.languageModel('openai'));
    expect(registry.languageModel('anthropic')).not.toBe(registry.languageModel('openai'));
    expect(registry.embeddingModel('dev')).toBe(registry.embeddingModel('dev'));
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses unknown, unconfigured and incapable vendors with 400 model.not_available', () => {
    const registry = registryWith({ ANTHROPIC_API_KEY: 'sk-b', MISTRAL_BASE_URL: fake.baseURL });
    const refusal = (call: () => unknown) => {
      try {
        call();
      } catch (error) {
        return { status: (error as any).status, code: (error as any).code, message: (error as Error).message };
      }
      throw new Error('accepted');
    };
    expect(refusal(() => registry.languageModel('openai'))).toEqual({
      status: 400,
      code: 'model.not_available',
      message: expect.stringContaining('set OPENAI_API_KEY'),
    });
    expect(refusal(() => registry.languageModel('mistral'))).toEqual({
      status: 400,
      code: 'model.not_available',
      message: expect.stringContaining('set MISTRAL_API_KEY'),
    });
    expect(refusal(() => registry.embeddingModel('ollama'))).toEqual({
      status: 400,
      code: 'model.not_available',
      message: expect.stringContaining('set OLLAMA_BASE_URL'),
    });
    expect(refusal(() => registry.embeddingModel('anthropic'))).toEqual({
      status: 400,
      code: 'model.not_available',
      message: expect.stringContaining('offers no embedding models'),
    });
    expect(refusal(() => registry.languageModel('nobody'))).toEqual({
      status: 400,
      code: 'model.not_available',
      message: expect.stringContaining('Unknown vendor "nobody"'),
    });
  });
});
