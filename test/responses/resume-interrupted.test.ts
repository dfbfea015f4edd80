import { createActivities } from '../../src/engine/job-kinds';
import type { ActivityContext } from '../../src/engine/activity-context';
import { responseStream } from '../../src/responses/response-events';
import { useEngineUnderTest } from '../engine/engine-under-test';
import { startFakeOpenAI, type FakeVendorServer } from '../fakes';

/**
 * A model turn run again after the attempt that streamed part of it died (the embedded engine's re-run after a crash
 * and Temporal's activity retry both land here): what the earlier attempt stored is what clients saw, so the new
 * attempt goes on from it. A vendor that continues replies (the dev vendor, Anthropic) continues the same message,
 * each word once; one that cannot (OpenAI) gets the interrupted message closed `incomplete`, then answers anew in a
 * message of its own. The earlier attempt is played by its stored events; the activities are the real ones, called
 * as an engine's second attempt.
 */
describe('responses: a turn resumed after its attempt died mid-stream', () => {
  let fake: FakeVendorServer;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());
  const suite = useEngineUnderTest({
    env: () => ({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: fake.baseURL, PROVIDER_MAX_RETRIES: '0' }),
  });

  /** A queued Response, started, with the first events of a message `text` stored as if streamed by a dead attempt. */
  async function interruptedResponse(model: string, input: string, text: string[]) {
    const created = await suite.app.request('POST', '/v2/responses', { key: suite.key, body: { model, input } });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const { db, events, logger, webhooks, catalog, providers, ledger, metrics, mcpSessions } = suite.app.runtime.deps;
    const activities = createActivities({
      db,
      events,
      logger,
      webhooks,
      catalog,
      providers,
      ledger,
      metrics,
      mcpSessions,
    });
    await activities.startResponse({ responseId: id });
    const item = {
      id: 'msg_dead0000000000000000',
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [],
    };
    const stored = [
      { type: 'response.output_item.added', output_index: 0, item },
      {
        type: 'response.content_part.added',
        output_index: 0,
        content_index: 0,
        item_id: item.id,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      },
      ...text.map((delta) => ({
        type: 'response.output_text.delta',
        output_index: 0,
        content_index: 0,
        item_id: item.id,
        delta,
      })),
    ];
    const first = (await events.read(id, -1)).length; // created, in_progress
    await events.append(
      responseStream(id),
      stored.map((event, index) => ({ ...event, sequence_number: first + index })),
    );
    // The engines pass their context as a second argument (the port's type leaves it out): this is attempt 2.
    const second: ActivityContext = { signal: new AbortController().signal, heartbeat: () => undefined, attempt: 2 };
    const callProvider = activities.callProvider as (
      input: { responseId: string },
      context: ActivityContext,
    ) => ReturnType<typeof activities.callProvider>;
    return { id, activities, outcome: await callProvider({ responseId: id }, second), read: () => events.read(id, -1) };
  }

  it('continues the message on a vendor that continues replies: one item, the words after the stored ones, each once', async () => {
    const { outcome, read } = await interruptedResponse('dev-echo', 'one two three four five six', ['one', ' two']);
    expect(outcome).toMatchObject({
      kind: 'generated',
      status: 'completed',
      output: [
        {
          type: 'message',
          id: 'msg_dead0000000000000000',
          status: 'completed',
          content: [{ text: 'one two three four five six' }],
        },
      ],
      // Billed for what the continuation cost: the prefix went in as input (6 + 2 words), four words came out.
      inputTokens: 8,
      outputTokens: 4,
    });
    const events = [...(await read()), ...((outcome as { unwrittenEvents?: any[] }).unwrittenEvents ?? [])];
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(
      events
        .filter((event) => event.type === 'response.output_text.delta')
        .map((event) => event.delta)
        .join(''),
    ).toBe('one two three four five six');
    expect(events.filter((event) => event.type === 'response.output_item.added')).toHaveLength(1);
  });

  it('closes the message incomplete and answers anew on a vendor that cannot continue', async () => {
    fake.script({ text: 'A fresh whole answer.' });
    const { outcome, read } = await interruptedResponse('gpt-4.1-mini', 'Say something.', ['Half an', ' answer']);
    expect(outcome).toMatchObject({
      kind: 'generated',
      status: 'completed',
      output: [
        {
          type: 'message',
          id: 'msg_dead0000000000000000',
          status: 'incomplete',
          content: [{ text: 'Half an answer' }],
        },
        { type: 'message', status: 'completed', content: [{ text: 'A fresh whole answer.' }] },
      ],
    });
    // The vendor was asked the question again, not given the half answer.
    const sent = fake.requests.at(-1)!.body as { input: Array<{ role: string }> };
    expect(sent.input.map((item) => item.role)).not.toContain('assistant');
    const events = [...(await read()), ...((outcome as { unwrittenEvents?: any[] }).unwrittenEvents ?? [])];
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    // The interrupted item is closed before the new one opens: no delta a client saw is contradicted.
    const types = events.map((event) => `${event.type}:${event.output_index ?? ''}`);
    expect(types.indexOf('response.output_item.done:0')).toBeGreaterThan(
      types.lastIndexOf('response.output_text.delta:0'),
    );
    expect(types.indexOf('response.output_item.added:1')).toBeGreaterThan(types.indexOf('response.output_item.done:0'));
    expect(
      events.find((event) => event.type === 'response.output_item.done' && event.output_index === 0),
    ).toMatchObject({ item: { status: 'incomplete', content: [{ text: 'Half an answer' }] } });
  });
});
