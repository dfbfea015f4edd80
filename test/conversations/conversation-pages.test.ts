import { useTestApp } from '../support/harness';

/** A page of conversation items stops at 4 MiB of item text (has_more), however large `limit` is. */
describe('conversation item pages bounded by size', () => {
  const suite = useTestApp();
  let id: string;
  const text = (label: string) => `${label} ${'x'.repeat(1.5 * 1024 * 1024)}`; // 1.5 MiB each: three make a page over 4 MiB
  beforeAll(async () => {
    const created = await suite.app.request('POST', '/v2/conversations', {
      key: suite.key,
      body: { items: [{ type: 'message', role: 'user', content: 'small first' }] },
    });
    id = created.body.id;
    for (const label of ['big1', 'big2', 'big3']) {
      const added = await suite.app.request('POST', `/v2/conversations/${id}/items`, {
        key: suite.key,
        body: { items: [{ type: 'message', role: 'user', content: text(label) }] },
      });
      expect(added.status).toBe(200);
    }
    await suite.app.request('POST', `/v2/conversations/${id}/items`, {
      key: suite.key,
      body: { items: [{ type: 'message', role: 'user', content: 'small last' }] },
    });
  });

  const labels = (body: any) =>
    body.data.map(
      (item: any) =>
        item.content[0].text.split(' ')[0] + (item.content[0].text.length > 100 ? '' : `:${item.content[0].text}`),
    );

  it('cuts a page short with has_more and continues from its last item, in either order and direction', async () => {
    const first = await suite.app.request('GET', `/v2/conversations/${id}/items?order=asc&limit=100`, {
      key: suite.key,
    });
    expect(first.status).toBe(200);
    expect([labels(first.body), first.body.has_more]).toEqual([['small:small first', 'big1', 'big2'], true]);
    const second = await suite.app.request(
      'GET',
      `/v2/conversations/${id}/items?order=asc&limit=100&after=${first.body.last_id}`,
      { key: suite.key },
    );
    expect([labels(second.body), second.body.has_more]).toEqual([['big3', 'small:small last'], false]);

    const newest = await suite.app.request('GET', `/v2/conversations/${id}/items?order=desc&limit=100`, {
      key: suite.key,
    });
    expect([labels(newest.body), newest.body.has_more]).toEqual([['small:small last', 'big3', 'big2'], true]);
    // `before` pages are read from the cursor outward and come back in the requested order.
    const before = await suite.app.request(
      'GET',
      `/v2/conversations/${id}/items?order=asc&limit=100&before=${second.body.last_id}`,
      { key: suite.key },
    );
    expect([labels(before.body), before.body.has_more]).toEqual([['big2', 'big3'], true]);
  });

  it('always returns at least one item, and small pages as before', async () => {
    const one = await suite.app.request(
      'GET',
      `/v2/conversations/${id}/items?order=asc&limit=1&after=${(await suite.app.request('GET', `/v2/conversations/${id}/items?order=asc&limit=1`, { key: suite.key })).body.last_id}`,
      { key: suite.key },
    );
    expect([labels(one.body), one.body.has_more]).toEqual([['big1'], true]);
    const two = await suite.app.request('GET', `/v2/conversations/${id}/items?order=desc&limit=2`, { key: suite.key });
    expect([labels(two.body), two.body.has_more]).toEqual([['small:small last', 'big3'], true]);
  });
});
