import { startFakeAnthropic } from './fake-anthropic';
import { startFakeGemini } from './fake-gemini';
import { startFakeOpenAI } from './fake-openai';
import type { FakeVendorServer } from './fake-vendor-server';

/**
 * The fakes of every language-model wire protocol at once, and the settings that point the project catalog at
 * them: OpenAI (Responses API), Anthropic (Messages), Gemini, and an OpenAI-compatible vendor (Chat
 * Completions: Mistral, and Ollama keyless, on a second OpenAI fake). For suites that run one scenario on
 * every vendor.
 */
export interface VendorFakes {
  openai: FakeVendorServer;
  anthropic: FakeVendorServer;
  gemini: FakeVendorServer;
  compatible: FakeVendorServer;
  /** Keys and *_BASE_URL settings for TestApp.start({ env }). */
  env: Record<string, string>;
  reset(): void;
  close(): Promise<void>;
}

export async function startVendorFakes(): Promise<VendorFakes> {
  const [openai, anthropic, gemini, compatible] = await Promise.all([
    startFakeOpenAI(),
    startFakeAnthropic(),
    startFakeGemini(),
    startFakeOpenAI(),
  ]);
  const all = [openai, anthropic, gemini, compatible];
  return {
    openai,
    anthropic,
    gemini,
    compatible,
    env: {
      OPENAI_API_KEY: 'sk-openai-fake-test-key',
      ANTHROPIC_API_KEY: 'sk-ant-fake-test-key',
      GEMINI_API_KEY: 'gemini-fake-test-key',
      MISTRAL_API_KEY: 'mistral-fake-test-key',
      OPENAI_BASE_URL: openai.baseURL,
      ANTHROPIC_BASE_URL: anthropic.baseURL,
      GEMINI_BASE_URL: gemini.baseURL,
      MISTRAL_BASE_URL: compatible.baseURL,
      // A keyless local OpenAI-compatible server (Ollama in the catalog) on the same fake.
      OLLAMA_BASE_URL: compatible.baseURL,
    },
    reset: () => all.forEach((fake) => fake.reset()),
    close: async () => {
      await Promise.all(all.map((fake) => fake.close()));
    },
  };
}

/** One model of each language-model vendor, and which fake serves it: `it.each(LANGUAGE_VENDORS)` before the fakes start. */
export const LANGUAGE_VENDORS: ReadonlyArray<{
  vendor: string;
  model: string;
  fake: (fakes: VendorFakes) => FakeVendorServer;
}> = [
  { vendor: 'openai', model: 'gpt-4.1-mini', fake: (fakes) => fakes.openai },
  { vendor: 'anthropic', model: 'claude-sonnet-4-5', fake: (fakes) => fakes.anthropic },
  { vendor: 'google', model: 'gemini-2.5-flash', fake: (fakes) => fakes.gemini },
  { vendor: 'openai-compatible (mistral)', model: 'mistral-small-latest', fake: (fakes) => fakes.compatible },
];
