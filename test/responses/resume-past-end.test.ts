import { useTestApp } from '../support/harness';

/** A resume that starts after where the stream will end closes when the Response finishes, not never. */
describe('responses: resuming past the end of a running stream', () => {
  const suite = useTestApp();

  it('ends with no events once the Response finishes', async () => {
    const created = await suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      body: { model: 'dev-echo', input: '/delay 30 a b c d e' },
    });
    expect(created.status).toBe(200);
    const resumed = await fetch(
      `${suite.app.baseUrl}/v2/responses/${created.body.id}?stream=true&starting_after=1000`,
      { headers: { 'x-auth-token': suite.key } },
    );
    expect(resumed.status).toBe(200);
    const text = await resumed.text();
    expect(text.includes('data: ')).toBe(false);
    const final = await suite.app.request('GET', `/v2/responses/${created.body.id}`, { key: suite.key });
    expect(final.body.status).toBe('completed');
  });
});
