import OpenAI from 'openai';
import { useTestApp } from '../support/harness';

/**
 * The official `openai` package, unmodified, pointed at /v2 with the API key as its own `Authorization:
 * Bearer` (issue 16, first part: what works on /v2 today without any workaround).
 */
describe('the OpenAI SDK on /v2', () => {
  const suite = useTestApp();
  const client = () => new OpenAI({ apiKey: suite.key, baseURL: `${suite.app.baseUrl}/v2`, maxRetries: 0 });

  it('responses.create (synchronous) and retrieve, with the key as Authorization: Bearer', async () => {
    const response = await client().responses.create({ model: 'dev-echo', input: 'hello from the sdk', background: false } as never);
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('hello from the sdk');
    const again = await client().responses.retrieve(response.id);
    expect(again.id).toBe(response.id);
  });

  it('responses.stream(): events in order and finalResponse() with the text', async () => {
    const stream = client().responses.stream({ model: 'dev-echo', input: 'streamed through the helper', background: false } as never);
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('streamed through the helper');
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
  });

  it('a wrong key is the SDK\'s typed AuthenticationError', async () => {
    const bad = new OpenAI({ apiKey: 'sk-proj-not-ours', baseURL: `${suite.app.baseUrl}/v2`, maxRetries: 0 });
    await expect(bad.responses.retrieve('resp_x')).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
