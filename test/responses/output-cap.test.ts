import { LANGUAGE_VENDORS, startVendorFakes, type VendorFakes } from '../fakes';
import { TestApp } from '../support/harness';
import { MAX_CHARS_PER_TOKEN } from '../../src/responses/output-cap';
import { createResponse, openCreateStream, waitForFinal } from './helpers';

/**
 * `max_output_tokens` is enforced on the stream: a vendor that ignores it and never stops is cut at the cap (its
 * request aborted), and the Response ends incomplete, billed for the cap. Before, only the 10-minute provider
 * timeout ended it (~350 MB of deltas per Response).
 */
let fakes: VendorFakes;

describe('max_output_tokens against a vendor stream that never stops', () => {
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    fakes = await startVendorFakes();
    // A provider timeout far above the test's: only the cap can end these Responses in time.
    app = await TestApp.start({ env: { ...fakes.env, PROVIDER_TIMEOUT_MS: '600000' } });
    ({ key } = await app.createAccount({ balance: 10_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fakes?.close();
  });

  it.each(LANGUAGE_VENDORS)(
    '$vendor: a background Response ends incomplete (max_output_tokens) at the cap, the vendor request aborted, billed at the cap',
    async ({ model, fake: fakeOf }) => {
      const fake = () => fakeOf(fakes);
      fake().reset();
      fake().script({ textChunks: ['word '], endless: true });
      const cap = 64;
      const created = await createResponse(app, key, {
        model,
        input: 'talk for ever',
        max_output_tokens: cap,
        background: true,
      });
      expect(created.status).toBe(200);
      const final = await waitForFinal(app, key, created.body.id);
      expect(final.status).toBe('incomplete');
      expect(final.incomplete_details).toEqual({ reason: 'max_output_tokens' });
      const text = final.output[0].content[0].text as string;
      expect(text.length).toBeLessThanOrEqual(cap * MAX_CHARS_PER_TOKEN);
      expect(text.startsWith('word word')).toBe(true);
      expect(final.usage.output_tokens).toBe(cap);
      await fake().waitForClientAbort(0);

      const transactions = (
        await app.request('GET', '/v2/organization/transactions?limit=50', { key })
      ).body.transactions.filter((row: any) => row.metadata.response_id === final.id);
      expect(transactions).toHaveLength(1);
      expect(transactions[0].usage).toEqual({
        prompt_tokens: final.usage.input_tokens,
        completion_tokens: cap,
        total_tokens: final.usage.input_tokens + cap,
      });
    },
  );

  it('a streamed Response sees the text up to the cap, then response.incomplete', async () => {
    fakes.openai.reset();
    fakes.openai.script({ textChunks: ['word '], endless: true });
    const stream = await openCreateStream(app, key, {
      model: 'gpt-4.1-mini',
      input: 'talk for ever',
      max_output_tokens: 20,
    });
    const events = await stream.readAll();
    expect(events.at(-1)?.data.type).toBe('response.incomplete');
    const done = events.find((event) => event.data.type === 'response.output_text.done');
    expect(done?.data.text.length).toBeLessThanOrEqual(20 * MAX_CHARS_PER_TOKEN);
  });

  it('a vendor that honours the cap is passed through as it is', async () => {
    fakes.openai.reset();
    fakes.openai.script({ text: 'Short and done.', usage: { inputTokens: 9, outputTokens: 4 } });
    const reply = await createResponse(app, key, {
      model: 'gpt-4.1-mini',
      input: 'hi',
      max_output_tokens: 16,
      background: false,
    });
    expect(reply.body).toMatchObject({ status: 'completed', usage: { input_tokens: 9, output_tokens: 4 } });
    expect(reply.body.output[0].content[0].text).toBe('Short and done.');
  });
});
