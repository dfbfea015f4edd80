import { useTestApp, ADMIN_TOKEN } from '../support/harness';

/**
 * 405 with `Allow` for a wrong method on any known path, in the spec's envelope (issue 34): a POST to the bulk
 * delete of a thread's messages used to be read as a message update of the message "bulk-delete" (a 400).
 */
describe('http: a wrong method on a known path', () => {
  const suite = useTestApp();

  it('POST to bulk-delete (a DELETE path) is 405 with Allow: DELETE, in the envelope; the right method still works', async () => {
    const thread = await suite.app.request('POST', '/v2/threads', { key: suite.key, body: {} });
    expect(thread.status).toBe(200);
    const path = `/v2/threads/${thread.body.id}/messages/bulk-delete`;
    const wrong = await suite.app.request('POST', path, { key: suite.key, body: { ids: [] } });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('DELETE');
    expect(wrong.body).toEqual({
      error: { code: 'request.method_not_allowed', message: `POST is not allowed on ${path}; it takes DELETE.` },
    });
    const create = await suite.app.request('GET', `/v2/threads/${thread.body.id}/messages/bulk-create`, {
      key: suite.key,
    });
    expect([create.status, create.headers.get('allow')]).toEqual([405, 'POST']);
    // A message path with a real id keeps its methods.
    const message = await suite.app.request('GET', `/v2/threads/${thread.body.id}/messages/msg_missing`, {
      key: suite.key,
    });
    expect(message.status).toBe(404);
  });

  it('any other known path: the collection, an item, and the admin API; an unknown path stays 404', async () => {
    const put = await suite.app.request('PUT', '/v2/responses', { key: suite.key, body: {} });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toContain('POST');
    expect(put.body.error.code).toBe('request.method_not_allowed');
    const patch = await suite.app.request('PATCH', '/v2/conversations/conv_x', { key: suite.key, body: {} });
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')!.split(', ').sort()).toEqual(expect.arrayContaining(['DELETE', 'GET', 'POST']));
    const admin = await suite.app.request('PUT', '/admin/accounts', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: {},
    });
    expect([admin.status, admin.body.error.code]).toEqual([405, 'request.method_not_allowed']);
    const unknown = await suite.app.request('POST', '/v2/no-such-thing', { key: suite.key, body: {} });
    expect(unknown.status).toBe(404);
  });

  it('paths as the routers match them: in any case, and with a parameter before a literal segment', async () => {
    // The routers match case-insensitively: so does the 405.
    const upper = await suite.app.request('PUT', '/V2/Responses', { key: suite.key, body: {} });
    expect([upper.status, upper.headers.get('allow')]).toEqual([405, 'POST']);
    const cancel = await suite.app.request('GET', '/v2/responses/resp_x/cancel', { key: suite.key });
    expect([cancel.status, cancel.headers.get('allow')]).toEqual([405, 'POST']);
  });
});
