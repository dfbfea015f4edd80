import {
  startVendorFakes,
  type FakeScript,
  type FakeVendorServer,
  type RecordedRequest,
  type VendorFakes,
} from '../fakes';
import { expectCarried } from '../support/carry';
import { debitsOf, pollUntil } from '../responses/helpers';
import { TestApp } from '../support/harness';

/**
 * Spec: Legacy endpoints (Runs); api-decisions 6, 10. Runs are emulated by the service on the provider port, so a
 * Run must work on every adapter: OpenAI (Responses API), Anthropic (Messages), Gemini (generateContent) and an
 * OpenAI-compatible vendor (Chat Completions; Mistral in the catalog). Each vendor is a loopback fake speaking its
 * wire protocol (test/fakes); the project catalog points at them through the *_BASE_URL settings.
 */

interface VendorCase {
  /** Catalog vendor code (also the `vendor` of debits). */
  vendor: 'openai' | 'anthropic' | 'google' | 'mistral' | 'ollama';
  model: string;
  /** Which wire protocol the fake saw: how to read the conversation back out of a recorded request. */
  wire: 'responses' | 'messages' | 'gemini' | 'chat';
  /** The vendor names its tool calls (Gemini does not: the SDK makes the ids up). */
  callIdPrefix?: string;
  fake: () => FakeVendorServer;
}

let openai: FakeVendorServer;
let anthropic: FakeVendorServer;
let gemini: FakeVendorServer;
let compatible: FakeVendorServer;

const VENDORS: VendorCase[] = [
  { vendor: 'openai', model: 'gpt-4.1-mini', wire: 'responses', callIdPrefix: 'call_', fake: () => openai },
  { vendor: 'anthropic', model: 'claude-sonnet-4-5', wire: 'messages', callIdPrefix: 'toolu_', fake: () => anthropic },
  { vendor: 'google', model: 'gemini-2.5-flash', wire: 'gemini', fake: () => gemini },
  { vendor: 'mistral', model: 'mistral-small-latest', wire: 'chat', callIdPrefix: 'call_', fake: () => compatible },
];

let fakes: VendorFakes;

/** One turn of the conversation a vendor was sent, whatever its wire format. */
type Turn =
  | { role: 'system' | 'user' | 'assistant'; text: string }
  | { call: string; args: unknown; id?: string }
  | { output: string; id?: string; name?: string };

const partsText = (content: unknown): string =>
  typeof content === 'string' ? content : (content as Array<{ text?: string }>).map((part) => part.text ?? '').join('');

/** The conversation in a recorded request, normalised across the four wire protocols. */
function conversationSent(wire: VendorCase['wire'], body: any): Turn[] {
  const turns: Turn[] = [];
  switch (wire) {
    case 'responses':
      if (body.instructions) turns.push({ role: 'system', text: body.instructions });
      for (const item of body.input) {
        if (item.type === 'function_call')
          turns.push({ call: item.name, args: JSON.parse(item.arguments), id: item.call_id });
        else if (item.type === 'function_call_output')
          turns.push({
            output: typeof item.output === 'string' ? item.output : JSON.stringify(item.output),
            id: item.call_id,
          });
        else if (item.role)
          turns.push({ role: item.role === 'developer' ? 'system' : item.role, text: partsText(item.content) });
        else throw new Error(`unexpected Responses input item ${JSON.stringify(item)}`);
      }
      return turns;
    case 'messages':
      for (const part of typeof body.system === 'string' ? [{ text: body.system }] : (body.system ?? []))
        turns.push({ role: 'system', text: part.text });
      for (const message of body.messages) {
        for (const part of typeof message.content === 'string'
          ? [{ type: 'text', text: message.content }]
          : message.content) {
          if (part.type === 'text') turns.push({ role: message.role, text: part.text });
          else if (part.type === 'tool_use') turns.push({ call: part.name, args: part.input, id: part.id });
          else if (part.type === 'tool_result') turns.push({ output: partsText(part.content), id: part.tool_use_id });
          else throw new Error(`unexpected Anthropic content block ${JSON.stringify(part)}`);
        }
      }
      return turns;
    case 'gemini':
      if (body.systemInstruction) turns.push({ role: 'system', text: partsText(body.systemInstruction.parts) });
      for (const content of body.contents) {
        for (const part of content.parts) {
          if (part.text !== undefined)
            turns.push({ role: content.role === 'model' ? 'assistant' : 'user', text: part.text });
          // Gemini pairs a response with its call by name (and by id, which the SDK sends when the call had one).
          else if (part.functionCall)
            turns.push({
              call: part.functionCall.name,
              args: part.functionCall.args,
              ...(part.functionCall.id ? { id: part.functionCall.id } : {}),
            });
          else if (part.functionResponse) {
            const { name, id, response } = part.functionResponse;
            turns.push({ output: response.content, name, ...(id ? { id } : {}) });
          } else throw new Error(`unexpected Gemini part ${JSON.stringify(part)}`);
        }
      }
      return turns;
    case 'chat':
      for (const message of body.messages) {
        if (message.role === 'tool') {
          turns.push({ output: partsText(message.content), id: message.tool_call_id });
          continue;
        }
        if (message.content) turns.push({ role: message.role, text: partsText(message.content) });
        for (const call of message.tool_calls ?? [])
          turns.push({ call: call.function.name, args: JSON.parse(call.function.arguments), id: call.id });
      }
      return turns;
  }
}

/** The function tools a recorded request declared. */
function toolNamesSent(wire: VendorCase['wire'], body: any): string[] {
  switch (wire) {
    case 'responses':
      return (body.tools ?? []).map((tool: any) => tool.name);
    case 'messages':
      return (body.tools ?? []).map((tool: any) => tool.name);
    case 'gemini':
      return (body.tools ?? []).flatMap((tool: any) =>
        (tool.functionDeclarations ?? []).map((declaration: any) => declaration.name),
      );
    case 'chat':
      return (body.tools ?? []).map((tool: any) => tool.function.name);
  }
}

function temperatureSent(wire: VendorCase['wire'], body: any): unknown {
  return wire === 'gemini' ? body.generationConfig?.temperature : body.temperature;
}

function maxTokensSent(wire: VendorCase['wire'], body: any): unknown {
  switch (wire) {
    case 'responses':
      return body.max_output_tokens;
    case 'messages':
      return body.max_tokens;
    case 'gemini':
      return body.generationConfig?.maxOutputTokens;
    case 'chat':
      return body.max_completion_tokens ?? body.max_tokens;
  }
}

/** How the expected call and output turns look on this vendor (a Gemini output also names its function). */
const callTurn = (_v: VendorCase, id: string, name: string, args: unknown): Turn => ({ call: name, args, id });
const outputTurn = (v: VendorCase, id: string, name: string, output: string): Turn =>
  v.wire === 'gemini' ? { output, name, id } : { output, id };

describe('Runs on every vendor (fake vendor servers)', () => {
  let app: TestApp;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    fakes = await startVendorFakes();
    ({ openai, anthropic, gemini, compatible } = fakes);
    // One retry: a fault scripted twice outlasts them.
    app = await TestApp.start({ env: { ...fakes.env, PROVIDER_MAX_RETRIES: '1' } });
    ({ key, accountId } = await app.createAccount({ balance: 10_000_000 }));
  });
  afterAll(async () => {
    await app?.close();
    await fakes?.close();
  });
  beforeEach(() => {
    fakes.reset();
  });

  const call = (method: string, path: string, body?: unknown) => app.request(method, path, { key, body });
  const weatherTool = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  };
  const FINAL = ['completed', 'incomplete', 'failed', 'cancelled', 'expired'];

  async function newAssistant(body: Record<string, unknown>): Promise<number> {
    const reply = await call('POST', '/v2/assistants', { name: 'Vendor test', ...body });
    expect([reply.status, reply.body.error]).toEqual([200, undefined]);
    return reply.body.id;
  }
  async function newThread(messages: Array<{ role: string; content: string }>): Promise<string> {
    const reply = await call('POST', '/v2/threads', { messages });
    expect(reply.status).toBe(200);
    return reply.body.id;
  }
  async function startRun(threadId: string, body: Record<string, unknown>) {
    const reply = await call('POST', `/v2/threads/${threadId}/runs`, body);
    expect([reply.status, reply.body.error]).toEqual([200, undefined]);
    return reply.body;
  }
  const getRun = async (threadId: string, runId: string) =>
    (await call('GET', `/v2/threads/${threadId}/runs/${runId}`)).body;
  /** Runs have no event stream: poll the Run until it reaches one of `statuses`; ending otherwise fails at once. */
  async function untilStatus(threadId: string, runId: string, statuses: string[]) {
    const run = await pollUntil(
      () => getRun(threadId, runId),
      (current) => statuses.includes(current.status) || FINAL.includes(current.status),
      15_000,
    );
    if (!statuses.includes(run.status))
      throw new Error(
        `run ${runId} ended ${run.status} (${JSON.stringify(run.last_error)}), not ${statuses.join(' or ')}`,
      );
    return run;
  }
  const messagesOf = async (threadId: string) =>
    (await call('GET', `/v2/threads/${threadId}/messages?order=asc`)).body.data as any[];
  const debitsFor = async (runId: string) =>
    (await debitsOf(app, accountId)).filter((debit) => (debit.metadata as { run_id?: string }).run_id === runId);
  const submit = (threadId: string, runId: string, outputs: Array<{ tool_call_id: string; output: string }>) =>
    call('POST', `/v2/threads/${threadId}/runs/${runId}/submit_tool_outputs`, { tool_outputs: outputs });

  /** The exact cost of one call by the catalog price (kopecks, not rounded). */
  function costOf(model: string, inputTokens: number, outputTokens: number): number {
    const price = app.runtime.deps.catalog.getModel(model)!.price!;
    return (inputTokens * price.input + outputTokens * price.output) / price.count;
  }
  const script = (v: VendorCase, ...steps: FakeScript[]) => v.fake().script(...steps);
  const requestsOf = (v: VendorCase): RecordedRequest[] => v.fake().requests;

  describe.each(VENDORS)('$vendor ($model)', (v) => {
    it('completes with the vendor answer appended, its usage and one debit; the vendor got the whole thread', async () => {
      script(v, { text: `Hello from ${v.vendor}.`, usage: { inputTokens: 1200, outputTokens: 300 } });
      const assistantId = await newAssistant({ model: v.model, instructions: 'Answer briefly.', temperature: 0.4 });
      const threadId = await newThread([
        { role: 'user', content: 'Hi there' },
        { role: 'assistant', content: 'Hello! How can I help?' },
        { role: 'user', content: 'Say hello in one line.' },
      ]);
      const created = await startRun(threadId, {
        assistant_id: assistantId,
        additional_instructions: 'The user is in Paris.',
      });
      expect(created).toMatchObject({ object: 'thread.run', model: v.model, assistant_id: assistantId });

      const run = await untilStatus(threadId, created.id, ['completed']);
      const cost = costOf(v.model, 1200, 300);
      expect(run).toMatchObject({
        last_error: null,
        required_action: null,
        failed_at: null,
        completed_at: expect.any(Number),
      });
      expect(run.usage).toEqual({
        prompt_tokens: 1200,
        completion_tokens: 300,
        total_tokens: 1500,
        cost: expect.closeTo(cost, 9),
      });

      const messages = await messagesOf(threadId);
      expect(messages.map((message) => [message.role, message.content.map((part: any) => part.text).join('')])).toEqual(
        [
          ['user', 'Hi there'],
          ['assistant', 'Hello! How can I help?'],
          ['user', 'Say hello in one line.'],
          ['assistant', `Hello from ${v.vendor}.`],
        ],
      );
      expect(messages[3]).toMatchObject({ run_id: run.id, assistant_id: assistantId });

      // One vendor call, with the Assistant's and the Run's instructions and every message of the thread in order.
      const sent = requestsOf(v);
      expect(sent).toHaveLength(1);
      const upstreamId = app.runtime.deps.catalog.getModel(v.model)!.upstreamId;
      if (v.wire === 'gemini') expect(sent[0].path).toBe(`/v1beta/models/${upstreamId}:generateContent`);
      else expect(sent[0].body.model).toBe(upstreamId);
      expect(conversationSent(v.wire, sent[0].body)).toEqual([
        { role: 'system', text: 'Answer briefly.\n\nThe user is in Paris.' },
        { role: 'user', text: 'Hi there' },
        { role: 'assistant', text: 'Hello! How can I help?' },
        { role: 'user', text: 'Say hello in one line.' },
      ]);
      expect(temperatureSent(v.wire, sent[0].body)).toBe(0.4);
      expect(toolNamesSent(v.wire, sent[0].body)).toEqual([]);

      const debits = await debitsFor(run.id);
      expect(debits).toHaveLength(1);
      expectCarried(debits[0], cost);
      expect(debits[0]).toMatchObject({
        operation_key: `run:${run.id}:0`,
        metadata: { source: 'api', vendor: v.vendor, model: v.model, service: 'runs', run_id: run.id },
        usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 },
      });
    });

    it('stops in requires_action with the vendor tool call, then sends the call and its output back with the thread', async () => {
      const callId = v.callIdPrefix ? `${v.callIdPrefix}weather_1` : undefined;
      script(
        v,
        {
          toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' }, callId }],
          usage: { inputTokens: 800, outputTokens: 40 },
        },
        { text: 'It is sunny in Paris.', usage: { inputTokens: 900, outputTokens: 60 } },
      );
      const assistantId = await newAssistant({ model: v.model, instructions: 'Use the tools.', tools: [weatherTool] });
      const threadId = await newThread([{ role: 'user', content: 'What is the weather in Paris?' }]);
      const created = await startRun(threadId, { assistant_id: assistantId });

      const waiting = await untilStatus(threadId, created.id, ['requires_action']);
      const toolCalls = waiting.required_action.submit_tool_outputs.tool_calls;
      expect(toolCalls).toEqual([
        {
          id: callId ?? expect.any(String),
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
        },
      ]);
      expect(waiting.usage).toEqual({
        prompt_tokens: 800,
        completion_tokens: 40,
        total_tokens: 840,
        cost: expect.closeTo(costOf(v.model, 800, 40), 9),
      });
      expect(waiting.expires_at).toEqual(expect.any(Number));
      expect(toolNamesSent(v.wire, requestsOf(v)[0].body)).toEqual(['get_weather']);
      // Nothing is appended while the Run waits; the first round is billed already.
      expect((await messagesOf(threadId)).map((message) => message.role)).toEqual(['user']);
      expect((await debitsFor(created.id)).map((debit) => debit.operation_key)).toEqual([`run:${created.id}:0`]);

      const id = toolCalls[0].id as string;
      const accepted = await submit(threadId, created.id, [{ tool_call_id: id, output: 'sunny, 21 C' }]);
      expect([accepted.status, accepted.body.error]).toEqual([200, undefined]);
      const run = await untilStatus(threadId, created.id, ['completed']);

      // The second vendor call: the thread, then the round's function call and the submitted output.
      const sent = requestsOf(v);
      expect(sent).toHaveLength(2);
      expect(conversationSent(v.wire, sent[1].body)).toEqual([
        { role: 'system', text: 'Use the tools.' },
        { role: 'user', text: 'What is the weather in Paris?' },
        callTurn(v, id, 'get_weather', { city: 'Paris' }),
        outputTurn(v, id, 'get_weather', 'sunny, 21 C'),
      ]);
      expect(toolNamesSent(v.wire, sent[1].body)).toEqual(['get_weather']);

      expect(run).toMatchObject({ required_action: null, last_error: null, expires_at: null });
      const [cost0, cost1] = [costOf(v.model, 800, 40), costOf(v.model, 900, 60)];
      expect(run.usage).toEqual({
        prompt_tokens: 1700,
        completion_tokens: 100,
        total_tokens: 1800,
        cost: expect.closeTo(cost0 + cost1, 9),
      });
      const messages = await messagesOf(threadId);
      expect(messages.map((message) => [message.role, message.content[0].text])).toEqual([
        ['user', 'What is the weather in Paris?'],
        ['assistant', 'It is sunny in Paris.'],
      ]);
      expect(messages[1]).toMatchObject({ run_id: run.id, assistant_id: assistantId });
      // One debit per vendor call, keyed by its round.
      const debits = await debitsFor(run.id);
      expect(debits.map((debit) => [debit.operation_key, debit.usage])).toEqual([
        [`run:${run.id}:0`, { prompt_tokens: 800, completion_tokens: 40, total_tokens: 840 }],
        [`run:${run.id}:1`, { prompt_tokens: 900, completion_tokens: 60, total_tokens: 960 }],
      ]);
      expectCarried(debits[0], cost0);
      expectCarried(debits[1], cost1);
      for (const debit of debits)
        expect(debit.metadata).toEqual({
          source: 'api',
          vendor: v.vendor,
          model: v.model,
          service: 'runs',
          run_id: run.id,
          cost: expect.any(Number),
          carry: expect.any(Number),
        });
    });

    it('answers two parallel tool calls in one round: both calls and both outputs go back, in order', async () => {
      const ids = v.callIdPrefix ? [`${v.callIdPrefix}oslo`, `${v.callIdPrefix}rome`] : [undefined, undefined];
      script(
        v,
        {
          toolCalls: [
            { name: 'get_weather', arguments: { city: 'Oslo' }, callId: ids[0] },
            { name: 'get_weather', arguments: { city: 'Rome' }, callId: ids[1] },
          ],
        },
        { text: 'Oslo 3 C, Rome 18 C.' },
      );
      const assistantId = await newAssistant({ model: v.model, tools: [weatherTool] });
      const threadId = await newThread([{ role: 'user', content: 'Weather in Oslo and Rome?' }]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      const waiting = await untilStatus(threadId, created.id, ['requires_action']);
      const toolCalls = waiting.required_action.submit_tool_outputs.tool_calls as Array<{
        id: string;
        function: { arguments: string };
      }>;
      expect(toolCalls.map((toolCall) => toolCall.function.arguments)).toEqual(['{"city":"Oslo"}', '{"city":"Rome"}']);
      if (v.callIdPrefix) expect(toolCalls.map((toolCall) => toolCall.id)).toEqual(ids);
      expect(new Set(toolCalls.map((toolCall) => toolCall.id)).size).toBe(2);

      // Outputs in the other order: they are matched by id, and sent back in the order of the calls.
      const [oslo, rome] = toolCalls.map((toolCall) => toolCall.id);
      const accepted = await submit(threadId, created.id, [
        { tool_call_id: rome, output: '18 C' },
        { tool_call_id: oslo, output: '3 C' },
      ]);
      expect(accepted.status).toBe(200);
      await untilStatus(threadId, created.id, ['completed']);
      const sent = requestsOf(v);
      expect(sent).toHaveLength(2);
      expect(conversationSent(v.wire, sent[1].body)).toEqual([
        { role: 'user', text: 'Weather in Oslo and Rome?' },
        callTurn(v, oslo, 'get_weather', { city: 'Oslo' }),
        callTurn(v, rome, 'get_weather', { city: 'Rome' }),
        outputTurn(v, oslo, 'get_weather', '3 C'),
        outputTurn(v, rome, 'get_weather', '18 C'),
      ]);
      if (v.wire === 'messages') {
        // Anthropic requires every tool_use of a turn to be answered in the very next (user) message.
        expect(sent[1].body.messages.map((message: any) => message.role)).toEqual(['user', 'assistant', 'user']);
      }
      expect((await messagesOf(threadId)).at(-1).content[0].text).toBe('Oslo 3 C, Rome 18 C.');
    });

    it('sends every earlier round back in order when the model asks for tools twice', async () => {
      const ids = v.callIdPrefix ? [`${v.callIdPrefix}round_0`, `${v.callIdPrefix}round_1`] : [undefined, undefined];
      script(
        v,
        {
          toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, callId: ids[0] }],
          usage: { inputTokens: 100, outputTokens: 10 },
        },
        {
          toolCalls: [{ name: 'get_weather', arguments: { city: 'Rome' }, callId: ids[1] }],
          usage: { inputTokens: 200, outputTokens: 10 },
        },
        { text: 'Rome is warmer.', usage: { inputTokens: 300, outputTokens: 4 } },
      );
      const assistantId = await newAssistant({ model: v.model, instructions: 'Compare.', tools: [weatherTool] });
      const threadId = await newThread([{ role: 'user', content: 'Is Oslo or Rome warmer?' }]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      const first = await untilStatus(threadId, created.id, ['requires_action']);
      const firstId = first.required_action.submit_tool_outputs.tool_calls[0].id as string;
      expect((await submit(threadId, created.id, [{ tool_call_id: firstId, output: '3 C' }])).status).toBe(200);
      // The second round's requires_action: wait for its call, which differs from the first.
      const second = await pollUntil(
        () => getRun(threadId, created.id),
        (run) =>
          FINAL.includes(run.status) ||
          (run.status === 'requires_action' && run.required_action.submit_tool_outputs.tool_calls[0].id !== firstId),
        15_000,
      );
      expect(second.status).toBe('requires_action');
      expect(
        second.required_action.submit_tool_outputs.tool_calls.map((toolCall: any) => toolCall.function.arguments),
      ).toEqual(['{"city":"Rome"}']);
      const secondId = second.required_action.submit_tool_outputs.tool_calls[0].id as string;
      expect((await submit(threadId, created.id, [{ tool_call_id: secondId, output: '18 C' }])).status).toBe(200);
      const run = await untilStatus(threadId, created.id, ['completed']);

      const sent = requestsOf(v);
      expect(sent).toHaveLength(3);
      expect(conversationSent(v.wire, sent[2].body)).toEqual([
        { role: 'system', text: 'Compare.' },
        { role: 'user', text: 'Is Oslo or Rome warmer?' },
        callTurn(v, firstId, 'get_weather', { city: 'Oslo' }),
        outputTurn(v, firstId, 'get_weather', '3 C'),
        callTurn(v, secondId, 'get_weather', { city: 'Rome' }),
        outputTurn(v, secondId, 'get_weather', '18 C'),
      ]);
      expect(run.usage).toMatchObject({ prompt_tokens: 600, completion_tokens: 24, total_tokens: 624 });
      expect((await debitsFor(run.id)).map((debit) => debit.operation_key)).toEqual(
        [0, 1, 2].map((round) => `run:${run.id}:${round}`),
      );
      expect((await messagesOf(threadId)).map((message) => message.content[0].text)).toEqual([
        'Is Oslo or Rome warmer?',
        'Rome is warmer.',
      ]);
    });

    it('passes max_completion_tokens on and ends incomplete, with the partial answer, when the vendor stops at the limit', async () => {
      script(v, { text: 'The first part of a', finishReason: 'length', usage: { inputTokens: 30, outputTokens: 50 } });
      const assistantId = await newAssistant({ model: v.model });
      const threadId = await newThread([{ role: 'user', content: 'Tell me a long story.' }]);
      const created = await startRun(threadId, { assistant_id: assistantId, max_completion_tokens: 50 });
      const run = await untilStatus(threadId, created.id, ['incomplete']);
      expect(maxTokensSent(v.wire, requestsOf(v)[0].body)).toBe(50);
      expect(run).toMatchObject({
        max_completion_tokens: 50,
        last_error: null,
        usage: { prompt_tokens: 30, completion_tokens: 50, total_tokens: 80 },
      });
      expect((await messagesOf(threadId)).map((message) => message.content[0].text)).toEqual([
        'Tell me a long story.',
        'The first part of a',
      ]);
      expect((await debitsFor(run.id)).map((debit) => debit.operation_key)).toEqual([`run:${run.id}:0`]);
    });

    it('ends incomplete when the vendor filters the answer away, billed, with no empty message appended', async () => {
      script(v, { text: '', finishReason: 'content_filter', usage: { inputTokens: 30, outputTokens: 0 } });
      const assistantId = await newAssistant({ model: v.model });
      const threadId = await newThread([{ role: 'user', content: 'Something filtered.' }]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      const run = await untilStatus(threadId, created.id, ['incomplete']);
      expect(run).toMatchObject({
        last_error: null,
        usage: { prompt_tokens: 30, completion_tokens: 0, total_tokens: 30 },
      });
      expect((await messagesOf(threadId)).map((message) => message.role)).toEqual(['user']);
      expect((await debitsFor(run.id)).map((debit) => debit.operation_key)).toEqual([`run:${run.id}:0`]);
    });

    it('cancels a Run while the vendor call hangs: the upstream request is aborted, nothing appended or billed', async () => {
      script(v, { hang: true });
      const assistantId = await newAssistant({ model: v.model });
      const threadId = await newThread([{ role: 'user', content: 'Hello?' }]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      await v.fake().waitForRequests(1);
      const cancelled = await call('POST', `/v2/threads/${threadId}/runs/${created.id}/cancel`);
      expect([cancelled.status, cancelled.body.status]).toEqual([200, 'cancelling']);
      await v.fake().waitForClientAbort(0);
      const run = await untilStatus(threadId, created.id, ['cancelled']);
      expect(run).toMatchObject({ cancelled_at: expect.any(Number), last_error: null, usage: null });
      expect(requestsOf(v)).toHaveLength(1);
      expect((await messagesOf(threadId)).map((message) => message.role)).toEqual(['user']);
      expect(await debitsFor(run.id)).toEqual([]);
    });

    const failures: Array<{ name: string; steps: FakeScript[]; code: string; message: string; calls: number }> = [
      {
        name: 'a 500 that outlasts the retries',
        steps: [{ status: 500 }, { status: 500 }],
        code: 'run.execution_failed',
        message: `Vendor ${v.vendor} failed to process the request (500)`,
        calls: 2,
      },
      {
        name: 'a 429 that outlasts the retries',
        steps: [
          { status: 429, retryAfter: '0' },
          { status: 429, retryAfter: '0' },
        ],
        code: 'run.execution_failed',
        message: `Vendor ${v.vendor} is rate limiting requests (429)`,
        calls: 2,
      },
      {
        name: 'a 400 (not retried)',
        steps: [{ status: 400, errorMessage: 'This model maximum context length is exceeded.' }],
        code: 'run.invalid_request',
        message: `Vendor ${v.vendor} rejected the request as invalid (400)`,
        calls: 1,
      },
    ];
    it.each(failures)(
      'ends the Run failed on $name, in the error envelope form, appending and billing nothing',
      async ({ steps, code, message, calls }) => {
        script(v, ...steps);
        const assistantId = await newAssistant({ model: v.model });
        const threadId = await newThread([{ role: 'user', content: 'Hello?' }]);
        const created = await startRun(threadId, { assistant_id: assistantId });
        const run = await untilStatus(threadId, created.id, ['failed']);
        expect(run.last_error).toEqual({ code, message: expect.stringContaining(message) });
        expect(Object.keys(run.last_error).sort()).toEqual(['code', 'message']);
        expect(run).toMatchObject({
          failed_at: expect.any(Number),
          completed_at: null,
          required_action: null,
          usage: null,
        });
        expect(requestsOf(v)).toHaveLength(calls);
        expect((await messagesOf(threadId)).map((message) => message.role)).toEqual(['user']);
        expect(await debitsFor(run.id)).toEqual([]);
        // The thread is free again: a new Run of it starts and completes.
        script(v, { text: 'Recovered.' });
        const again = await startRun(threadId, { assistant_id: assistantId });
        await untilStatus(threadId, again.id, ['completed']);
        expect((await messagesOf(threadId)).map((message) => message.content[0].text)).toEqual([
          'Hello?',
          'Recovered.',
        ]);
      },
    );
  });

  describe('openai specifics', () => {
    const v = VENDORS[0];

    it('a Run may override the Assistant model with another vendor: that vendor is called and named in the debit', async () => {
      script(VENDORS[1], { text: 'Claude here.', usage: { inputTokens: 10, outputTokens: 3 } });
      const assistantId = await newAssistant({ model: v.model, instructions: 'Be brief.' });
      const threadId = await newThread([{ role: 'user', content: 'Who are you?' }]);
      const created = await startRun(threadId, {
        assistant_id: assistantId,
        model: VENDORS[1].model,
        instructions: 'Be very brief.',
      });
      expect(created).toMatchObject({ model: VENDORS[1].model, instructions: 'Be very brief.' });
      const run = await untilStatus(threadId, created.id, ['completed']);
      expect(requestsOf(v)).toHaveLength(0);
      expect(conversationSent(VENDORS[1].wire, requestsOf(VENDORS[1])[0].body)).toEqual([
        { role: 'system', text: 'Be very brief.' },
        { role: 'user', text: 'Who are you?' },
      ]);
      expect((await messagesOf(threadId)).at(-1).content[0].text).toBe('Claude here.');
      expect((await debitsFor(run.id))[0].metadata).toMatchObject({ vendor: 'anthropic', model: VENDORS[1].model });
    });

    it('a vendor 401 fails the Run without repeating the service key back', async () => {
      script(v, { status: 401 });
      const assistantId = await newAssistant({ model: v.model });
      const threadId = await newThread([{ role: 'user', content: 'Hello?' }]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      const run = await untilStatus(threadId, created.id, ['failed']);
      expect(run.last_error).toEqual({
        code: 'run.execution_failed',
        message: expect.stringMatching(/^Vendor openai rejected the request \(401\)/),
      });
      expect(JSON.stringify(run)).not.toContain(fakes.env.OPENAI_API_KEY);
      expect(requestsOf(v)[0].headers.authorization).toBe(`Bearer ${fakes.env.OPENAI_API_KEY}`);
      expect(await debitsFor(run.id)).toEqual([]);
    });

    it('a failure in the round after the tool outputs keeps the first round billed and appends nothing', async () => {
      script(
        v,
        {
          toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' }, callId: 'call_then_fail' }],
          usage: { inputTokens: 500, outputTokens: 20 },
        },
        { status: 500 },
        { status: 500 },
      );
      const assistantId = await newAssistant({ model: v.model, tools: [weatherTool] });
      const threadId = await newThread([{ role: 'user', content: 'Weather?' }]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      await untilStatus(threadId, created.id, ['requires_action']);
      expect((await submit(threadId, created.id, [{ tool_call_id: 'call_then_fail', output: 'rain' }])).status).toBe(
        200,
      );
      const run = await untilStatus(threadId, created.id, ['failed']);
      expect(run.last_error).toEqual({
        code: 'run.execution_failed',
        message: expect.stringContaining('Vendor openai failed to process the request (500)'),
      });
      expect(run.usage).toEqual({
        prompt_tokens: 500,
        completion_tokens: 20,
        total_tokens: 520,
        cost: expect.closeTo(costOf(v.model, 500, 20), 9),
      });
      expect(requestsOf(v)).toHaveLength(3);
      expect((await messagesOf(threadId)).map((message) => message.role)).toEqual(['user']);
      expect((await debitsFor(run.id)).map((debit) => debit.operation_key)).toEqual([`run:${run.id}:0`]);
    });

    it('parallel_tool_calls: false keeps only the first call of the round, and sends back only that one', async () => {
      script(
        v,
        {
          toolCalls: [
            { name: 'get_weather', arguments: { city: 'Oslo' }, callId: 'call_first' },
            { name: 'get_weather', arguments: { city: 'Rome' }, callId: 'call_second' },
          ],
        },
        { text: 'Oslo: 3 C.' },
      );
      const assistantId = await newAssistant({ model: v.model, tools: [weatherTool] });
      const threadId = await newThread([{ role: 'user', content: 'Weather in Oslo and Rome?' }]);
      const created = await startRun(threadId, { assistant_id: assistantId, parallel_tool_calls: false });
      const waiting = await untilStatus(threadId, created.id, ['requires_action']);
      expect(requestsOf(v)[0].body.parallel_tool_calls).toBe(false);
      expect(waiting.required_action.submit_tool_outputs.tool_calls.map((toolCall: any) => toolCall.id)).toEqual([
        'call_first',
      ]);
      expect((await submit(threadId, created.id, [{ tool_call_id: 'call_first', output: '3 C' }])).status).toBe(200);
      await untilStatus(threadId, created.id, ['completed']);
      expect(conversationSent(v.wire, requestsOf(v)[1].body)).toEqual([
        { role: 'user', text: 'Weather in Oslo and Rome?' },
        { call: 'get_weather', args: { city: 'Oslo' }, id: 'call_first' },
        { output: '3 C', id: 'call_first' },
      ]);
    });
  });

  describe('what the vendor sees of a long thread (Ollama qwen2.5:7b: 32768 tokens, OpenAI-compatible)', () => {
    const v: VendorCase = { vendor: 'ollama', model: 'qwen2.5:7b', wire: 'chat', fake: () => compatible };
    // About 35000 tokens by the service's estimate (4 characters a token): more than the model's window.
    const huge = 'word '.repeat(28_000);

    it('leaves out older messages that do not fit the context window, newest kept, oldest first', async () => {
      script(v, { text: 'Answer.' });
      const assistantId = await newAssistant({ model: v.model });
      const threadId = await newThread([
        { role: 'user', content: huge },
        { role: 'assistant', content: 'That was long.' },
        { role: 'user', content: 'The latest question.' },
      ]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      await untilStatus(threadId, created.id, ['completed']);
      expect(requestsOf(v)[0].headers.authorization).toBeUndefined();
      expect(conversationSent(v.wire, requestsOf(v)[0].body)).toEqual([
        { role: 'assistant', text: 'That was long.' },
        { role: 'user', text: 'The latest question.' },
      ]);
    });

    it('message_limit keeps only the newest messages', async () => {
      script(v, { text: 'Answer.' });
      const assistantId = await newAssistant({ model: v.model, instructions: 'Be brief.' });
      const threadId = await newThread([
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'two' },
        { role: 'user', content: 'three' },
      ]);
      const created = await startRun(threadId, { assistant_id: assistantId, message_limit: 2 });
      await untilStatus(threadId, created.id, ['completed']);
      expect(conversationSent(v.wire, requestsOf(v)[0].body)).toEqual([
        { role: 'system', text: 'Be brief.' },
        { role: 'assistant', text: 'two' },
        { role: 'user', text: 'three' },
      ]);
    });

    it('fails the Run without calling the vendor when not even the newest message fits', async () => {
      const assistantId = await newAssistant({ model: v.model });
      const threadId = await newThread([{ role: 'user', content: huge }]);
      const created = await startRun(threadId, { assistant_id: assistantId });
      const run = await untilStatus(threadId, created.id, ['failed']);
      expect(run.last_error).toEqual({
        code: 'run.context_length_exceeded',
        message: expect.stringContaining('qwen2.5:7b (32768)'),
      });
      expect(requestsOf(v)).toHaveLength(0);
      expect(await debitsFor(run.id)).toEqual([]);
      expect((await messagesOf(threadId)).map((message) => message.role)).toEqual(['user']);
    });
  });
});
