export { startFakeAnthropic } from './fake-anthropic';
export { startFakeGemini } from './fake-gemini';
export { startFakeDeepgram } from './fake-deepgram';
export { startFakeOpenAI } from './fake-openai';
export { LANGUAGE_VENDORS, startVendorFakes, type VendorFakes } from './vendor-fakes';
export {
  DEFAULT_EMBEDDING,
  DEFAULT_REPLY_TEXT,
  DEFAULT_USAGE,
  type FakeFault,
  type FakeReply,
  type FakeScript,
  type FakeToolCall,
  type RecordedRequest,
} from './fake-script';
export type { FakeServerOptions, FakeVendorServer } from './fake-vendor-server';
