import { MockActivityEnvironment } from '@temporalio/testing';
import { sql } from 'kysely';
import { createActivities, type Activities } from '../../src/engine/job-kinds';
import type { StreamEvent } from '../../src/events/stream-event';
import { newId } from '../../src/ids';
import { appendTurnInput } from '../../src/responses/conversation-turns';
import type { FunctionToolSpec } from '../../src/responses/response-types';
import { storedRequest } from '../responses/helpers';
import type { FinalOutcome, GenerationOutcome } from '../../workflows/response.flow';
import { TestApp } from '../support/harness';
import { startReceiver, type Receiver } from '../webhooks/receiver';
import { quietLogger } from './workflow-bundle';

/**
 * The real activities (createActivities) inside Temporal's MockActivityEnvironment, against the real
 * database of a TestApp: the same Context (cancellation signal, heartbeats) a Temporal worker gives them.
 * Responses are inserted the way responses.service.ts writes them (row + `response.created` event) but
 * without a jobs row, so the embedded engine of the TestApp never picks them up: only these tests touch them.
 * One MockActivityEnvironment per activity run: its Context is shared and stays cancelled once cancelled.
 */
describe('response activities under MockActivityEnvironment', () => {
  let app: TestApp;
  let accountId: string;
  let key: string;
  let activities: Activities;
  let receiver: Receiver;

  beforeAll(async () => {
    app = await TestApp.start();
    ({ accountId, key } = await app.createAccount({ balance: 1_000_000 }));
    const { db, logger, events, webhooks, catalog, providers, ledger } = app.runtime.deps;
    // A short heartbeat period so a 50 ms-per-word call heartbeats several times.
    activities = createActivities({
      db,
      logger,
      events,
      webhooks,
      catalog,
      providers,
      ledger,
      heartbeatIntervalMs: 20,
    });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await app.close();
  });

  const environment = () =>
    new MockActivityEnvironment({ activityType: 'callProvider', heartbeatTimeoutMs: 20_000 }, { logger: quietLogger });

  async function insertResponse(
    text: string,
    options: {
      tools?: FunctionToolSpec[];
      metadata?: Record<string, string>;
      conversationId?: string;
      /** Its input appended to the conversation, as its creation does now (api-decisions 30). */
      turnInput?: true;
    } = {},
  ) {
    const id = newId('resp');
    const request = storedRequest(text, {
      tools: options.tools ?? [],
      ...(options.turnInput ? { input_in_conversation: true as const } : {}),
    });
    await app.db
      .insertInto('responses')
      .values({
        id,
        account_id: accountId,
        status: 'queued',
        background: true,
        model: 'dev-echo',
        vendor: 'dev',
        conversation_id: options.conversationId ?? null,
        request: JSON.stringify(request),
        metadata: JSON.stringify(options.metadata ?? {}),
      })
      .execute();
    await app.runtime.deps.events.write(id, [
      { type: 'response.created', sequence_number: 0, response: { id, status: 'queued' } },
    ]);
    if (options.turnInput) {
      const created = await row(id);
      await app.db.transaction().execute((trx) => appendTurnInput(trx, created));
    }
    return id;
  }

  const row = (id: string) => app.db.selectFrom('responses').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const storedEvents = (id: string): Promise<StreamEvent[]> => app.runtime.deps.events.read(id, -1);
  const ledgerRows = (id: string) =>
    app.db.selectFrom('ledger_transactions').selectAll().where('operation_key', '=', `response:${id}`).execute();
  const balance = async () =>
    (await app.db.selectFrom('accounts').select('balance').where('id', '=', accountId).executeTakeFirstOrThrow())
      .balance;

  /** startResponse + callProvider, each in its own environment, as a worker would run them. */
  /** A Response of a model (not a route) generated: an outcome finalizeResponse takes (never a failover). */
  async function generate(id: string): Promise<FinalOutcome> {
    expect(await environment().run(activities.startResponse, { responseId: id })).toEqual({ proceed: true });
    const outcome: GenerationOutcome = await environment().run(activities.callProvider, { responseId: id });
    if (outcome.kind === 'failover') throw new Error(`unexpected failover: ${JSON.stringify(outcome)}`);
    return outcome;
  }

  describe('startResponse', () => {
    it('moves queued → in_progress once and writes one response.in_progress event', async () => {
      const id = await insertResponse('hello');
      expect(await environment().run(activities.startResponse, { responseId: id })).toEqual({ proceed: true });
      const started = await row(id);
      expect(started.status).toBe('in_progress');
      expect(started.started_at).toBeInstanceOf(Date);
      // A retried attempt (the worker died after the commit) proceeds without a second event or a new start time.
      expect(await environment().run(activities.startResponse, { responseId: id })).toEqual({ proceed: true });
      expect((await row(id)).started_at).toEqual(started.started_at);
      expect((await storedEvents(id)).map((event) => event.type)).toEqual(['response.created', 'response.in_progress']);
    });

    it('refuses a Response whose cancel was requested, leaving it queued', async () => {
      const id = await insertResponse('hello');
      await app.db
        .updateTable('responses')
        .set({ cancel_requested_at: sql`now()` })
        .where('id', '=', id)
        .execute();
      expect(await environment().run(activities.startResponse, { responseId: id })).toEqual({ proceed: false });
      expect((await row(id)).status).toBe('queued');
      expect((await storedEvents(id)).map((event) => event.type)).toEqual(['response.created']);
    });
  });

  describe('callProvider', () => {
    it('streams the dev-echo reply to the event log, heartbeats with progress and returns the outcome', async () => {
      const id = await insertResponse('/delay 50 alpha beta gamma delta');
      await environment().run(activities.startResponse, { responseId: id });
      const env = environment();
      const heartbeats: unknown[] = [];
      env.on('heartbeat', (details) => heartbeats.push(details));
      const outcome = await env.run(activities.callProvider, { responseId: id });

      expect(outcome).toMatchObject({ kind: 'generated', status: 'completed', inputTokens: 6, outputTokens: 4 });
      const generated = outcome as Extract<GenerationOutcome, { kind: 'generated' }>;
      expect(generated.output).toEqual([
        {
          id: expect.stringMatching(/^msg_/),
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'alpha beta gamma delta' }],
        },
      ]);
      // Three 50 ms gaps with a 20 ms heartbeat period; details carry the next event sequence number.
      expect(heartbeats.length).toBeGreaterThanOrEqual(2);
      for (const details of heartbeats) expect(details).toEqual({ sequence: expect.any(Number) });

      // Events the writer had not written by the end come back unwritten, for finalizeResponse to store with the
      // final event (which ones depends on the writer's timer: test/events/event-writer.test.ts pins that down);
      // with what is stored they make one gap-free sequence holding each closing event once.
      const unwritten = (generated.unwrittenEvents ?? []) as StreamEvent[];
      const events = [...(await storedEvents(id)), ...unwritten];
      expect(events.filter((event) => event.type === 'response.output_text.done')).toHaveLength(1);
      expect(events.filter((event) => event.type === 'response.output_item.done')).toHaveLength(1);
      expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
      // The event writer may coalesce deltas; their concatenation is the reply.
      const deltas = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta);
      expect(deltas.join('')).toBe('alpha beta gamma delta');
      expect(generated.nextSequence).toBe(events.at(-1)!.sequence_number + 1);
      // Generation does not finalise: the row stays in_progress until finalizeResponse.
      expect((await row(id)).status).toBe('in_progress');
    });

    it('stops the vendor call promptly on cancel and rejects as cancelled (AbortError)', async () => {
      const id = await insertResponse('/delay 200 a b c d e f g');
      await environment().run(activities.startResponse, { responseId: id });
      const env = environment();
      let cancelledAt = 0;
      // Cancel once the call is under way (its first heartbeat), as a heartbeat response would deliver it.
      env.once('heartbeat', () => {
        cancelledAt = performance.now();
        env.cancel();
      });
      const startedAt = performance.now();
      const error = await env.run(activities.callProvider, { responseId: id }).then(
        () => undefined,
        (caught: Error) => caught,
      );
      const rejectedAt = performance.now();

      expect(error?.name).toBe('AbortError'); // the worker reports an AbortError after a cancel as "cancelled"
      expect(cancelledAt).toBeGreaterThan(startedAt);
      // Uncancelled, the six remaining 200 ms gaps would take 1.2 s.
      expect(rejectedAt - cancelledAt).toBeLessThan(600);
      const deltas = (await storedEvents(id)).filter((event) => event.type === 'response.output_text.delta');
      expect(deltas.length).toBeLessThan(7);
      expect((await row(id)).status).toBe('in_progress');
    });

    it('returns a function_call item for a tool call', async () => {
      const tools: FunctionToolSpec[] = [
        {
          type: 'function',
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ];
      const id = await insertResponse('/call get_weather {"city":"Paris"}', { tools });
      const outcome = await generate(id);
      expect(outcome).toMatchObject({ kind: 'generated', status: 'completed', outputTokens: 2 });
      expect((outcome as Extract<GenerationOutcome, { kind: 'generated' }>).output).toEqual([
        {
          id: expect.stringMatching(/^fc_/),
          type: 'function_call',
          call_id: expect.stringMatching(/^call_/),
          name: 'get_weather',
          arguments: '{"city":"Paris"}',
          status: 'completed',
        },
      ]);
    });

    it('returns a vendor failure as a failed outcome instead of throwing (no Temporal retry)', async () => {
      const id = await insertResponse('/error server');
      const outcome = await generate(id);
      expect(outcome).toEqual({
        kind: 'failed',
        code: 'response.execution_failed',
        message: expect.stringMatching(/^Vendor dev failed to process the request/),
        inputTokens: 0,
        outputTokens: 0,
      });
    });

    it('does not call the vendor for a Response that is already final', async () => {
      const id = await insertResponse('/delay 200 a b c');
      await app.db.updateTable('responses').set({ status: 'cancelled' }).where('id', '=', id).execute();
      expect(await environment().run(activities.callProvider, { responseId: id })).toEqual({ kind: 'cancelled' });
      expect((await storedEvents(id)).map((event) => event.type)).toEqual(['response.created']);
    });
  });

  describe('finalizeResponse', () => {
    it('is idempotent: a second call returns the same result, with one debit and one final event', async () => {
      const id = await insertResponse('one two three');
      const outcome = await generate(id);
      const before = await balance();

      const first = await environment().run(activities.finalizeResponse, { responseId: id, outcome });
      const second = await environment().run(activities.finalizeResponse, { responseId: id, outcome });
      expect(first).toEqual({ status: 'completed', webhook: false });
      expect(second).toEqual(first);

      const final = await row(id);
      expect(final.status).toBe('completed');
      expect(final.completed_at).toBeInstanceOf(Date);
      expect(final.output).toEqual((outcome as Extract<GenerationOutcome, { kind: 'generated' }>).output);
      expect(final.usage).toMatchObject({ input_tokens: 3, output_tokens: 3, total_tokens: 6 });
      const debits = await ledgerRows(id);
      expect(debits).toHaveLength(1);
      expect(debits[0].amount).toBeGreaterThan(0);
      expect(await balance()).toBe(before - debits[0].amount);
      // The closing events that came back unwritten were stored once, before the final event, gap-free.
      const stored = await storedEvents(id);
      expect(stored.map((event) => event.sequence_number)).toEqual(stored.map((_, index) => index));
      expect(stored.filter((event) => event.type === 'response.completed')).toHaveLength(1);
      expect(stored.filter((event) => event.type === 'response.output_item.done')).toHaveLength(1);
      expect(stored.at(-1)!.type).toBe('response.completed');
    });

    it('finalises concurrent Responses together (one statement per batch) with exact debits and gap-free streams', async () => {
      const conversation = await app.request('POST', '/v2/conversations', { key, body: {} });
      const ids = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          insertResponse(`word${index} two three`, index === 5 ? { conversationId: conversation.body.id } : {}),
        ),
      );
      const outcomes = await Promise.all(ids.map((id) => generate(id)));
      const before = await balance();
      // The cancelled one (index 3) charges nothing; finalising index 7 twice at once writes it once.
      const finals = await Promise.all([
        ...ids.map((id, index) =>
          environment().run(activities.finalizeResponse, {
            responseId: id,
            outcome: index === 3 ? { kind: 'cancelled' as const } : outcomes[index],
          }),
        ),
        environment().run(activities.finalizeResponse, { responseId: ids[7], outcome: outcomes[7] }),
      ]);
      expect(finals.map((final) => (final as { status: string }).status)).toEqual([
        ...ids.map((_, index) => (index === 3 ? 'cancelled' : 'completed')),
        'completed',
      ]);

      let charged = 0;
      for (const [index, id] of ids.entries()) {
        const debits = await ledgerRows(id);
        expect(debits).toHaveLength(index === 3 ? 0 : 1);
        charged += debits[0]?.amount ?? 0;
        const stored = await storedEvents(id);
        expect(stored.map((event) => event.sequence_number)).toEqual(stored.map((_, sequence) => sequence));
        expect(stored.at(-1)!.type).toBe(index === 3 ? 'response.cancelled' : 'response.completed');
        expect((await row(id)).usage).toMatchObject(
          index === 3 ? { total_tokens: 0, cost: 0 } : { input_tokens: 3, output_tokens: 3 },
        );
      }
      expect(charged).toBeGreaterThan(0);
      expect(await balance()).toBe(before - charged);
      const items = await app.request('GET', `/v2/conversations/${conversation.body.id}/items?order=asc`, { key });
      expect(items.body.data.map((item: { role: string }) => item.role)).toEqual(['user', 'assistant']);
    });

    it('a long answer writes its closing events itself and hands none over (workflow histories stay small)', async () => {
      const id = await insertResponse('/words 20000');
      const outcome = (await generate(id)) as Extract<GenerationOutcome, { kind: 'generated' }>;
      expect(outcome.unwrittenEvents).toBeUndefined();
      const written = await storedEvents(id);
      expect(written.at(-1)!.type).toBe('response.output_item.done');
      expect(outcome.nextSequence).toBe(written.at(-1)!.sequence_number + 1);
      await environment().run(activities.finalizeResponse, { responseId: id, outcome });
      const stored = await storedEvents(id);
      expect(stored.map((event) => event.sequence_number)).toEqual(stored.map((_, index) => index));
      expect(stored.at(-1)!.type).toBe('response.completed');
    });

    it('appends input and output to the conversation once, even when retried', async () => {
      const conversation = await app.request('POST', '/v2/conversations', { key, body: {} });
      expect(conversation.status).toBe(200);
      const id = await insertResponse('remember this', { conversationId: conversation.body.id });
      const outcome = await generate(id);
      await environment().run(activities.finalizeResponse, { responseId: id, outcome });
      await environment().run(activities.finalizeResponse, { responseId: id, outcome });
      const items = await app.request('GET', `/v2/conversations/${conversation.body.id}/items?order=asc`, { key });
      expect(items.status).toBe(200);
      expect(items.body.data.map((item: { role: string }) => item.role)).toEqual(['user', 'assistant']);
    });

    it('shows the turn as it happens: the message in progress once callProvider returns (a retry too), completed once by finalizeResponse', async () => {
      const conversation = (await app.request('POST', '/v2/conversations', { key, body: {} })).body.id;
      const items = async () =>
        (await app.request('GET', `/v2/conversations/${conversation}/items?order=asc`, { key })).body.data.map(
          (item: any) => `${item.role}:${item.status}:${item.content.map((part: any) => part.text).join('')}`,
        );
      const id = await insertResponse('/delay 20 alpha beta', { conversationId: conversation, turnInput: true });
      expect(await items()).toEqual(['user:completed:/delay 20 alpha beta']);
      const first = await generate(id);
      expect(await items()).toEqual(['user:completed:/delay 20 alpha beta', 'assistant:in_progress:']);
      // A second attempt (its worker lost) goes on from the stored events: still one message, its own input once.
      const retried: GenerationOutcome = await environment().run(activities.callProvider, { responseId: id });
      if (retried.kind !== 'generated') throw new Error(`unexpected outcome: ${JSON.stringify(retried)}`);
      const messageIds = (outcome: FinalOutcome) =>
        (outcome.kind === 'generated' ? outcome.output : []).map((item: any) => item.id);
      expect(messageIds(retried)).toEqual(messageIds(first));
      expect(await items()).toEqual(['user:completed:/delay 20 alpha beta', 'assistant:in_progress:']);
      await environment().run(activities.finalizeResponse, { responseId: id, outcome: retried });
      await environment().run(activities.finalizeResponse, { responseId: id, outcome: retried });
      expect(await items()).toEqual(['user:completed:/delay 20 alpha beta', 'assistant:completed:alpha beta']);

      // Failed: the input stays, the partial message goes.
      const failing = await insertResponse('/delay 20 one two', { conversationId: conversation, turnInput: true });
      await generate(failing);
      expect((await items()).slice(2)).toEqual(['user:completed:/delay 20 one two', 'assistant:in_progress:']);
      const outcome = {
        kind: 'failed' as const,
        code: 'vendor.unavailable',
        message: 'x',
        inputTokens: 0,
        outputTokens: 0,
      };
      await environment().run(activities.finalizeResponse, { responseId: failing, outcome });
      expect((await items()).slice(2)).toEqual(['user:completed:/delay 20 one two']);
    });

    it('a cancelled outcome ends the Response cancelled, with zero usage and no debit', async () => {
      const id = await insertResponse('/delay 200 a b c');
      await environment().run(activities.startResponse, { responseId: id });
      const result = await environment().run(activities.finalizeResponse, {
        responseId: id,
        outcome: { kind: 'cancelled' as const },
      });
      expect(result).toEqual({ status: 'cancelled', webhook: false });
      const final = await row(id);
      expect(final).toMatchObject({
        status: 'cancelled',
        output: [],
        usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, cost: 0 },
      });
      expect(await ledgerRows(id)).toHaveLength(0);
      expect((await storedEvents(id)).at(-1)).toMatchObject({
        type: 'response.cancelled',
        response: { id, status: 'cancelled' },
      });
    });

    it('records response.execution_failed (the flow outcome after exhausted retries) as failed', async () => {
      const id = await insertResponse('hello', { metadata: { webhook_url: `${receiver.url}/hook` } });
      await environment().run(activities.startResponse, { responseId: id });
      const outcome: GenerationOutcome = {
        kind: 'failed',
        code: 'response.execution_failed',
        message: 'The generation could not be completed; retry the request.',
        inputTokens: 0,
        outputTokens: 0,
      };
      expect(await environment().run(activities.finalizeResponse, { responseId: id, outcome })).toEqual({
        status: 'failed',
        webhook: true,
      });
      expect((await row(id)).error).toEqual({ code: 'response.execution_failed', message: outcome.message });
    });
  });

  describe('sendWebhook', () => {
    it('does nothing without metadata.webhook_url', async () => {
      const id = await insertResponse('hello');
      const outcome = await generate(id);
      await environment().run(activities.finalizeResponse, { responseId: id, outcome });
      const received = receiver.requests.length;
      await environment().run(activities.sendWebhook, { responseId: id });
      expect(receiver.requests.length).toBe(received);
      expect(
        await app.db.selectFrom('webhook_deliveries').select('id').where('resource_id', '=', id).execute(),
      ).toHaveLength(0);
    });

    it('posts the final status once, even when the activity is retried', async () => {
      const id = await insertResponse('hello', { metadata: { webhook_url: `${receiver.url}/hook` } });
      const outcome = await generate(id);
      await environment().run(activities.finalizeResponse, { responseId: id, outcome });
      await environment().run(activities.sendWebhook, { responseId: id });
      await environment().run(activities.sendWebhook, { responseId: id });
      // The activity claims the webhook; the process's webhook dispatcher sends it.
      await app.runtime.deps.webhooks.idle();
      const posts = receiver.requests.filter(
        (request) => request.path === '/hook' && JSON.parse(request.body).response_id === id,
      );
      expect(posts).toHaveLength(1);
      expect(JSON.parse(posts[0].body)).toMatchObject({ response_id: id, status: 'completed' });
    });
  });
});
