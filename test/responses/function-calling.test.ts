import { useTestApp } from '../support/harness';
import { createResponse, openCreateStream, outputText } from './helpers';

/** Spec: Responses (function tool, function_call output item, function_call_output input), Events (SSE). */
describe('responses: function calling', () => {
  const suite = useTestApp();

  const tools = [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ];
  const CALL = '/call get_weather {"city":"Paris"}';

  const expectFunctionCall = (item: any) =>
    expect(item).toEqual({
      id: expect.stringMatching(/^fc_/),
      type: 'function_call',
      call_id: expect.any(String),
      name: 'get_weather',
      arguments: '{"city":"Paris"}',
      status: 'completed',
    });

  it('returns a function_call item, then completes with the tool output (previous_response_id)', async () => {
    const call = await createResponse(suite.app, suite.key, { input: CALL, tools, background: false });
    expect(call.status).toBe(200);
    expect(call.body.status).toBe('completed');
    expect(call.body.output).toHaveLength(1);
    const [item] = call.body.output;
    expectFunctionCall(item);
    expect(JSON.parse(item.arguments)).toEqual({ city: 'Paris' });
    // As OpenAI's: `strict` is null when it was not sent.
    expect(call.body.tools).toEqual(tools.map((tool) => ({ ...tool, strict: null })));

    const answer = await createResponse(suite.app, suite.key, {
      previous_response_id: call.body.id,
      input: [{ type: 'function_call_output', call_id: item.call_id, output: 'sunny' }],
      tools,
      background: false,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('completed');
    expect(outputText(answer.body)).toContain('sunny');
    expect(outputText(answer.body)).toBe('Tool get_weather returned: sunny');
    // History: the /call message (3 words), the call (its name and one argument word), then the output (1).
    expect(answer.body.usage.input_tokens).toBe(3 + 2 + 1);
  });

  it('does the same round trip through a conversation, which records the call and its output', async () => {
    const conversation = (await suite.app.request('POST', '/v2/conversations', { key: suite.key, body: {} })).body.id;
    const call = await createResponse(suite.app, suite.key, { conversation, input: CALL, tools, background: false });
    const [item] = call.body.output;
    expectFunctionCall(item);

    const answer = await createResponse(suite.app, suite.key, {
      conversation,
      input: [{ type: 'function_call_output', call_id: item.call_id, output: 'sunny' }],
      tools,
      background: false,
    });
    expect(outputText(answer.body)).toBe('Tool get_weather returned: sunny');

    const items = (
      await suite.app.request('GET', `/v2/conversations/${conversation}/items?order=asc`, { key: suite.key })
    ).body.data;
    expect(items.map((entry: any) => [entry.type, entry.role ?? null, entry.response_id])).toEqual([
      ['message', 'user', call.body.id],
      ['function_call', null, call.body.id],
      ['function_call_output', null, answer.body.id],
      ['message', 'assistant', answer.body.id],
    ]);
    expect(items[1]).toMatchObject({
      id: item.id,
      call_id: item.call_id,
      name: 'get_weather',
      arguments: '{"city":"Paris"}',
      status: 'completed',
    });
    expect(items[2]).toMatchObject({ call_id: item.call_id, output: 'sunny' });
    expect(items[3].content).toEqual([
      { type: 'output_text', text: 'Tool get_weather returned: sunny', annotations: [], logprobs: [] },
    ]);
  });

  it('streams a function call as output_item.added and output_item.done', async () => {
    const stream = await openCreateStream(suite.app, suite.key, { input: CALL, tools });
    const events = await stream.readAll();
    expect(events.map((event) => event.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    events.forEach((event, index) => expect(event.data).toMatchObject({ type: event.event, sequence_number: index }));
    const [, , added, done, completed] = events;
    expect(added.data).toEqual({
      type: 'response.output_item.added',
      sequence_number: 2,
      output_index: 0,
      item: {
        id: expect.stringMatching(/^fc_/),
        type: 'function_call',
        call_id: expect.any(String),
        name: 'get_weather',
        arguments: '',
        status: 'in_progress',
      },
    });
    expect(done.data).toMatchObject({ type: 'response.output_item.done', output_index: 0 });
    expectFunctionCall(done.data.item);
    expect(done.data.item.id).toBe(added.data.item.id);
    expect(done.data.item.call_id).toBe(added.data.item.call_id);
    expect(completed.data.response.output).toEqual([done.data.item]);
  });

  it("uses an Assistant's model, instructions and function tools when the body gives none", async () => {
    const assistant = await suite.app.request('POST', '/v2/assistants', {
      key: suite.key,
      body: {
        model: 'dev-echo',
        name: 'weather desk',
        instructions: 'use the weather tool',
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', description: tools[0].description, parameters: tools[0].parameters },
          },
        ],
      },
    });
    expect(assistant.status).toBe(200);
    const reply = await suite.app.request('POST', '/v2/responses', {
      key: suite.key,
      body: { assistant_id: assistant.body.id, input: CALL, background: false },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      status: 'completed',
      model: 'dev-echo',
      assistant_id: assistant.body.id,
      instructions: 'use the weather tool',
    });
    expect(reply.body.tools).toEqual([
      {
        type: 'function',
        name: 'get_weather',
        description: tools[0].description,
        parameters: tools[0].parameters,
        strict: null,
      },
    ]);
    expectFunctionCall(reply.body.output[0]);
    // Instructions are sent to the model: 4 words, plus the 3 of the input.
    expect(reply.body.usage.input_tokens).toBe(4 + 3);
  });

  it('refuses a function_call_output whose call_id answers no function call, naming it; nothing is created', async () => {
    const before = (await suite.app.request('GET', '/v2/organization/balance', { key: suite.key })).body;
    const reply = await createResponse(suite.app, suite.key, {
      input: [{ type: 'function_call_output', call_id: 'call_nobody_made', output: 'sunny' }],
      tools,
      background: false,
    });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({
      error: { code: 'response.invalid_request', message: expect.stringContaining('"call_nobody_made"') },
    });
    expect(reply.body.error.message).toMatch(/^input\[0\]: no function call with call_id "call_nobody_made"/);
    // With a previous Response whose call has another id, the same.
    const call = await createResponse(suite.app, suite.key, { input: CALL, tools, background: false });
    const wrong = await createResponse(suite.app, suite.key, {
      previous_response_id: call.body.id,
      input: [{ type: 'function_call_output', call_id: `${call.body.output[0].call_id}x`, output: 'sunny' }],
      tools,
      background: false,
    });
    expect([wrong.status, wrong.body.error.code]).toEqual([400, 'response.invalid_request']);
    // A call and its output in the same input are answered.
    const together = await createResponse(suite.app, suite.key, {
      input: [
        { type: 'function_call', call_id: 'call_inline', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'call_inline', output: 'snow' },
      ],
      tools,
      background: false,
    });
    expect(together.status).toBe(200);
    expect((await suite.app.request('GET', '/v2/organization/balance', { key: suite.key })).body.balance).toBeLessThan(
      before.balance,
    );
  });

  it('refuses a function_call_output input item without call_id', async () => {
    const reply = await createResponse(suite.app, suite.key, {
      input: [{ type: 'function_call_output', output: 'sunny' }],
    });
    expect([reply.status, reply.body.error.code]).toEqual([400, 'response.invalid_request']);
  });
});
