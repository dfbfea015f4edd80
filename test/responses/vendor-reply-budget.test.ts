import { LANGUAGE_VENDORS, startVendorFakes, type VendorFakes } from '../fakes';
import { TestApp } from '../support/harness';
import { createResponse, waitForFinal } from './helpers';

/**
 * A vendor reply has a byte budget (PROVIDER_MAX_STREAM_BYTES), counted while it is read: past it the connection
 * is closed and the Response fails as a reply that could not be read (not retried, nothing billed), instead of
 * being read whole (a stream that never stops was read for the whole provider timeout).
 */
const BUDGET = 64 * 1024;
let fakes: VendorFakes;

describe('the byte budget of vendor replies', () => {
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    fakes = await startVendorFakes();
    app = await TestApp.start({ env: { ...fakes.env, PROVIDER_MAX_STREAM_BYTES: String(BUDGET) } });
    ({ key } = await app.createAccount({ balance: 1_000_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fakes?.close();
  });

  const huge = 'x'.repeat(2 * BUDGET);

  it.each(LANGUAGE_VENDORS)(
    '$vendor: a streamed reply past the budget fails the Response, once, unbilled',
    async ({ model, fake: fakeOf }) => {
      const fake = () => fakeOf(fakes);
      fake().reset();
      fake().setDefault({ textChunks: [huge], endless: true });
      try {
        const created = await createResponse(app, key, {
          model,
          input: 'hi',
          max_output_tokens: 16_000,
          background: true,
        });
        expect(created.body).toMatchObject({ status: 'queued' });
        const final = await waitForFinal(app, key, created.body.id);
        expect(final.status).toBe('failed');
        expect(final.error.message).toMatch(/could not be read/);
        // Not retried: another attempt would be as large.
        expect(fake().requests).toHaveLength(1);
        const transactions = (
          await app.request('GET', '/v2/organization/transactions?limit=50', { key })
        ).body.transactions.filter((row: any) => row.metadata.response_id === final.id);
        expect(transactions).toEqual([]);
      } finally {
        fake().setDefault({});
      }
    },
  );

  it('a synchronous (not streamed) reply declared past the budget is refused without reading it', async () => {
    fakes.openai.reset();
    fakes.openai.script({ text: huge });
    const reply = await createResponse(app, key, {
      model: 'gpt-4.1-mini',
      input: 'hi',
      max_output_tokens: 16_000,
      background: false,
    });
    expect(reply.body.status).toBe('failed');
    expect(reply.body.error.message).toMatch(/could not be read/);
  });

  it('a reply within the budget is untouched', async () => {
    fakes.openai.reset();
    // A stream repeats its text in its closing events: a sixteenth of the budget, five times over, fits.
    fakes.openai.script({ text: 'x'.repeat(BUDGET / 16) });
    const created = await createResponse(app, key, {
      model: 'gpt-4.1-mini',
      input: 'hi',
      max_output_tokens: 16_000,
      background: true,
    });
    const final = await waitForFinal(app, key, created.body.id);
    expect(final.status).toBe('completed');
    expect(final.output[0].content[0].text).toHaveLength(BUDGET / 16);
  });
});
