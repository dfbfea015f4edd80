import { ActivityCancellationType, DeterminismViolationError } from '@temporalio/workflow';
import type { McpCallRequest, McpCallResult, McpListing } from '../../src/mcp/mcp-types';
import { MAX_MCP_ROUNDS, type GenerationOutcome, type GenerationRound } from '../../workflows/response.flow';
import { HistoryBuilder } from './history-builder';
import { useReplay, type Probe } from './replay-probes';

/**
 * The MCP loop of `responseWorkflow` replayed offline against hand-built histories: list once, a model turn
 * with two concurrent tool calls, a second turn with one, a last turn that answers; what each turn is given
 * (the output so far, the sequence it continues at, the events it stores first) is checked through the probe.
 */
const { replay } = useReplay('resp_mcp_replay', 'switchyard-mcp-replay');

const input = { responseId: 'resp_replay' };
const listing: McpListing = {
  servers: [{ serverLabel: 'calc', tools: [{ name: 'add', description: 'Adds.', input_schema: { type: 'object' } }] }],
  items: [
    {
      id: 'mcpl_1',
      type: 'mcp_list_tools',
      server_label: 'calc',
      tools: [{ name: 'add', description: 'Adds.', input_schema: { type: 'object' } }],
      error: null,
    },
  ],
};
const callItem = (id: string, args: string) => ({
  id,
  type: 'mcp_call',
  server_label: 'calc',
  name: 'add',
  arguments: args,
  output: null,
  error: null,
  status: 'in_progress',
});
const call = (itemId: string, args: string): McpCallRequest => ({
  itemId,
  serverLabel: 'calc',
  name: 'add',
  arguments: args,
});
const turn = (output: unknown[], calls: McpCallRequest[], nextSequence: number, tokens: number): GenerationOutcome => ({
  kind: 'generated',
  status: 'completed',
  output,
  inputTokens: tokens,
  outputTokens: 1,
  nextSequence,
  ...(calls.length > 0 ? { mcpCalls: calls } : {}),
});

const turn1 = turn(
  [listing.items[0], callItem('mcp_a', '{"a":1,"b":2}'), callItem('mcp_b', '{"a":3,"b":4}')],
  [call('mcp_a', '{"a":1,"b":2}'), call('mcp_b', '{"a":3,"b":4}')],
  14,
  10,
);
const resultA: McpCallResult = { itemId: 'mcp_a', output: '3', error: null };
const resultB: McpCallResult = { itemId: 'mcp_b', output: null, error: 'the tool failed' };
const turn2Output = (prior: unknown[]) => [...prior, callItem('mcp_c', '{"a":7,"b":0}')];
const resultC: McpCallResult = { itemId: 'mcp_c', output: '7', error: null };

/** Started, listed, and (unless `firstTurn` is false) the first model turn with its two calls. */
function loopStart(firstTurn = true) {
  const history = new HistoryBuilder().started('responseWorkflow', [input]).workflowTask();
  history.activity('startResponse', { proceed: true, mcp: true }).workflowTask();
  history.activity('listMcpTools', listing).workflowTask();
  if (firstTurn) history.activity('callProvider', turn1).workflowTask();
  return history;
}

/** The whole two-round loop; `finalTurn` is the third model turn's outcome. */
function twoRoundHistory(finalTurn: (prior: unknown[]) => GenerationOutcome) {
  const history = loopStart();
  // The turn's two calls are scheduled in one workflow task and complete in either order.
  const a = history.scheduleActivity('callMcpTool');
  const b = history.scheduleActivity('callMcpTool');
  history.completeActivity(b, resultB).completeActivity(a, resultA).workflowTask();
  const afterRound1 = [
    listing.items[0],
    { ...callItem('mcp_a', '{"a":1,"b":2}'), output: '3', status: 'completed' },
    { ...callItem('mcp_b', '{"a":3,"b":4}'), error: 'the tool failed', status: 'failed' },
  ];
  history
    .activity('callProvider', turn(turn2Output(afterRound1), [call('mcp_c', '{"a":7,"b":0}')], 20, 20))
    .workflowTask();
  history.activity('callMcpTool', resultC).workflowTask();
  const afterRound2 = [...afterRound1, { ...callItem('mcp_c', '{"a":7,"b":0}'), output: '7', status: 'completed' }];
  history.activity('callProvider', finalTurn(afterRound2)).workflowTask();
  return { history, afterRound1, afterRound2 };
}

const types = (probe: Probe) => probe.activities.map((activity) => activity.type);
const argsOf = (probe: Probe, type: string): any[] =>
  probe.activities.filter((activity) => activity.type === type).map((activity) => activity.args[0]);

describe('responseWorkflow replay: the MCP loop', () => {
  it('two rounds: list once, concurrent calls, results fed to the next turn, usage summed, one finalisation', async () => {
    const answer = (prior: unknown[]) =>
      turn(
        [
          ...prior,
          {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: '3 and 7' }],
          },
        ],
        [],
        30,
        30,
      );
    const { history, afterRound1, afterRound2 } = twoRoundHistory(answer);
    history.activity('finalizeResponse', { status: 'completed', webhook: false }).workflowTask().completed('completed');
    const probe = await replay(history.build());
    expect(types(probe)).toEqual([
      'startResponse',
      'listMcpTools',
      'callProvider',
      'callMcpTool',
      'callMcpTool',
      'callProvider',
      'callMcpTool',
      'callProvider',
      'finalizeResponse',
    ]);
    expect(argsOf(probe, 'callMcpTool')).toEqual([
      { ...input, call: call('mcp_a', '{"a":1,"b":2}') },
      { ...input, call: call('mcp_b', '{"a":3,"b":4}') },
      { ...input, call: call('mcp_c', '{"a":7,"b":0}') },
    ]);

    const rounds = argsOf(probe, 'callProvider').map((args) => args.round as GenerationRound);
    expect(rounds.map((round) => [round.index, round.nextSequence, round.mcpToolsOff])).toEqual([
      [0, 2, false],
      [1, 14, false],
      [2, 20, false],
    ]);
    expect(rounds[0]!.output).toEqual(listing.items);
    expect(rounds[0]!.pendingEvents.map((event) => event.type)).toEqual([
      'response.output_item.added',
      'response.mcp_list_tools.in_progress',
      'response.mcp_list_tools.completed',
      'response.output_item.done',
    ]);
    expect(rounds[1]!.output).toEqual(afterRound1);
    // The results close each call in call order, whatever order they finished in.
    expect(rounds[1]!.pendingEvents.map((event) => [event.type, event.output_index])).toEqual([
      ['response.mcp_call.completed', 1],
      ['response.output_item.done', 1],
      ['response.mcp_call.failed', 2],
      ['response.output_item.done', 2],
    ]);
    expect(rounds[2]!.output).toEqual(afterRound2);

    const outcome = argsOf(probe, 'finalizeResponse')[0].outcome;
    expect(outcome).toMatchObject({
      kind: 'generated',
      status: 'completed',
      inputTokens: 60,
      outputTokens: 3,
      nextSequence: 30,
    });
    expect(outcome.mcpCalls).toBeUndefined();
    expect(probe.results).toEqual(['completed']);
  });

  it('the MCP steps run with the generation options (heartbeat, cancellation waited for)', async () => {
    const answer = (prior: unknown[]) => turn(prior, [], 30, 1);
    const { history } = twoRoundHistory(answer);
    history.activity('finalizeResponse', { status: 'completed', webhook: false }).workflowTask().completed('completed');
    const probe = await replay(history.build());
    for (const activity of probe.activities.filter((entry) => ['listMcpTools', 'callMcpTool'].includes(entry.type))) {
      expect(activity.options).toMatchObject({
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        heartbeatTimeout: '10 seconds',
      });
    }
  });

  it('cancel during a tool call: the call is cancelled, and the turns before are billed with the cancelled Response', async () => {
    const history = loopStart();
    const a = history.scheduleActivity('callMcpTool');
    const b = history.scheduleActivity('callMcpTool');
    history.completeActivity(b, resultB).workflowTask();
    history.signal('cancel').workflowTask().cancelRequested(a).activityCancelled(a).workflowTask();
    history.activity('finalizeResponse', { status: 'cancelled', webhook: false }).workflowTask().completed('cancelled');
    const probe = await replay(history.build());
    expect(argsOf(probe, 'finalizeResponse')[0].outcome).toEqual({
      kind: 'cancelled',
      inputTokens: 10,
      outputTokens: 1,
    });
    expect(probe.results).toEqual(['cancelled']);
  });

  it('the last turn after MAX_MCP_ROUNDS offers no MCP tools', async () => {
    const history = loopStart(false);
    let sequence = 2;
    for (let index = 0; index < MAX_MCP_ROUNDS; index++) {
      const id = `mcp_${index}`;
      sequence += 6;
      history.activity('callProvider', turn([callItem(id, '{}')], [call(id, '{}')], sequence, 1)).workflowTask();
      history.activity('callMcpTool', { itemId: id, output: 'x', error: null }).workflowTask();
    }
    history.activity('callProvider', turn([], [], sequence + 3, 1)).workflowTask();
    history.activity('finalizeResponse', { status: 'completed', webhook: false }).workflowTask().completed('completed');
    const probe = await replay(history.build());
    const rounds = argsOf(probe, 'callProvider').map((args) => args.round as GenerationRound);
    expect(rounds).toHaveLength(MAX_MCP_ROUNDS + 1);
    expect(rounds.map((round) => round.mcpToolsOff)).toEqual([...Array(MAX_MCP_ROUNDS).fill(false), true]);
  });

  it('rejects a history in which a tool call was not made (the loop went straight to the next turn)', async () => {
    const history = loopStart();
    history.activity('callProvider', turn([], [], 20, 1)).workflowTask();
    await expect(replay(history.build())).rejects.toThrow(DeterminismViolationError);
  });
});
