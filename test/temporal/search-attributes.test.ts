import { jobKinds } from '../../src/engine/job-kinds';
import { missingSearchAttributes, SEARCH_ATTRIBUTES, searchAttributesOf } from '../../src/engine/search-attributes';
import { postTranscription, toneWav } from '../audio/audio-fixtures';
import { useTestApp } from '../support/harness';

/**
 * Temporal search attributes and memo, checked offline: what a workflow starts with (the Temporal engine passes
 * this to client.workflow.start; the TEMPORAL_ADDRESS suite sees it on a server), and each kind's labels read
 * from its resource.
 */
describe('Temporal search attributes', () => {
  const suite = useTestApp();

  it('a job starts with its account, kind, model, vendor, background and status as search attributes, and a memo', () => {
    const labels = { accountId: 'acct_1', model: 'gpt-4.1-mini', vendor: 'openai', background: true, status: 'queued' };
    const { typedSearchAttributes, memo } = searchAttributesOf({ id: 'resp_1', kind: 'response' }, labels);
    expect(typedSearchAttributes.map((pair) => [pair.key.name, pair.key.type, pair.value])).toEqual([
      ['SwitchyardAccountId', 'KEYWORD', 'acct_1'],
      ['SwitchyardKind', 'KEYWORD', 'response'],
      ['SwitchyardModel', 'KEYWORD', 'gpt-4.1-mini'],
      ['SwitchyardVendor', 'KEYWORD', 'openai'],
      ['SwitchyardBackground', 'BOOL', true],
      ['SwitchyardStatus', 'KEYWORD', 'queued'],
    ]);
    expect(memo).toEqual({
      kind: 'response',
      resourceId: 'resp_1',
      accountId: 'acct_1',
      model: 'gpt-4.1-mini',
      vendor: 'openai',
      background: true,
    });
  });

  it('registers only what the namespace lacks', () => {
    expect(missingSearchAttributes({})).toEqual({
      SwitchyardAccountId: 'KEYWORD',
      SwitchyardKind: 'KEYWORD',
      SwitchyardModel: 'KEYWORD',
      SwitchyardVendor: 'KEYWORD',
      SwitchyardBackground: 'BOOL',
      SwitchyardStatus: 'KEYWORD',
    });
    expect(
      missingSearchAttributes({
        SwitchyardAccountId: 2,
        SwitchyardKind: 2,
        SwitchyardModel: 2,
        SwitchyardVendor: 2,
        SwitchyardStatus: 2,
      }),
    ).toEqual({ SwitchyardBackground: 'BOOL' });
    expect(Object.keys(SEARCH_ATTRIBUTES)).toHaveLength(6);
  });

  it('each kind reads its labels from its resource: a Response, a Run, an asynchronous transcription; none for a missing one', async () => {
    const { db } = suite.app;
    const response = (
      await suite.app.request('POST', '/v2/responses', {
        key: suite.key,
        body: { model: 'dev-echo', input: 'hi', background: false },
      })
    ).body;
    expect(await jobKinds.response.labels(db, response.id)).toEqual({
      accountId: suite.accountId,
      model: 'dev-echo',
      vendor: 'dev',
      background: false,
      status: 'completed',
    });

    const assistant = (
      await suite.app.request('POST', '/v2/assistants', { key: suite.key, body: { model: 'dev-echo', name: 'labels' } })
    ).body;
    expect(assistant.id).toEqual(expect.any(Number));
    const run = (
      await suite.app.request('POST', '/v2/threads/runs', {
        key: suite.key,
        body: { assistant_id: assistant.id, thread: { messages: [{ role: 'user', content: 'hi' }] } },
      })
    ).body;
    expect(await jobKinds.run.labels(db, run.id)).toEqual({
      accountId: suite.accountId,
      model: 'dev-echo',
      vendor: 'dev',
      background: true,
      status: expect.stringMatching(/^(queued|in_progress|completed)$/),
    });

    const submitted = await postTranscription(
      suite.app.baseUrl,
      suite.key,
      { bytes: toneWav(1, [[0.2, 0.6]]), name: 'clip.wav' },
      { model: 'dev-stt-async' },
    );
    expect(submitted.status).toBe(200);
    expect(await jobKinds.transcription.labels(db, submitted.body.request_id)).toEqual({
      accountId: suite.accountId,
      model: 'dev-stt-async',
      vendor: 'dev',
      background: true,
      status: expect.any(String),
    });

    expect(await jobKinds.response.labels(db, 'resp_missing')).toBeUndefined();
  });
});
