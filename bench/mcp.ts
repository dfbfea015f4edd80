import { performance } from 'node:perf_hooks';
import { connectMcpServer } from '../src/mcp/mcp-client';
import { startMcpTestServer } from '../test/mcp/mcp-test-server';
import { environmentFacts, percentile, round, startBenchStack, writeReport } from './support';

/**
 * What an MCP round adds to a Response over the tool's own time, on loopback. Synchronous dev-echo Responses
 * (no model latency) against a real MCP server (the official SDK's, test/mcp/mcp-test-server.ts) whose `add`
 * tool takes no time: `rounds` tool rounds (`/call add … /then …`) against none, interleaved, one at a time.
 * Added time per round = (p50 with rounds − p50 without) / rounds: the model turn's bookkeeping, the call's
 * at-most-once record, its session with the server (initialize, call, close) and the recorded steps.
 * For reference, the bare session (connect, call, close) from this process. Target: ≤ 5 ms p50 per round.
 */
export async function runMcpBench(options: {
  pglite: boolean;
  postgresUrl: string;
  rounds: number;
  samples: number;
  output: string;
}) {
  const mcp = await startMcpTestServer();
  const stack = await startBenchStack({
    pin: false,
    pglite: options.pglite,
    postgresUrl: options.postgresUrl,
    extraEnv: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
  });
  try {
    const tools = [{ type: 'mcp', server_label: 'calc', server_url: `${mcp.url}/mcp`, require_approval: 'never' }];
    const loop = Array.from({ length: options.rounds }, (_, index) => `/call add {"a": ${index}, "b": 1}`).join(
      ' /then ',
    );
    const respond = async (input: string) => {
      const started = performance.now();
      const reply = await fetch(`${stack.base}/v2/responses`, {
        method: 'POST',
        headers: { 'x-auth-token': stack.key, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'dev-echo', input, tools, background: false }),
      });
      const body = (await reply.json()) as { status?: string; output?: Array<{ type: string; error?: string | null }> };
      if (reply.status !== 200 || body.status !== 'completed')
        throw new Error(`the Response answered ${reply.status}: ${JSON.stringify(body)}`);
      const calls = body.output!.filter((item) => item.type === 'mcp_call');
      if (input === loop && (calls.length !== options.rounds || calls.some((call) => call.error)))
        throw new Error(`expected ${options.rounds} good calls: ${JSON.stringify(body.output)}`);
      return performance.now() - started;
    };
    const direct = async () => {
      const started = performance.now();
      const controller = new AbortController();
      const session = await connectMcpServer(
        { type: 'mcp', server_label: 'calc', server_url: `${mcp.url}/mcp`, require_approval: 'never' },
        { allowPrivateNetworks: true, timeoutMs: 10_000, signal: controller.signal },
      );
      const result = await session.callTool('add', { a: 1, b: 2 }, controller.signal);
      await session.close();
      if (result.output !== '3') throw new Error(`direct call gave ${JSON.stringify(result)}`);
      return performance.now() - started;
    };

    // Warm-up: code paths, connections, the listing.
    for (let i = 0; i < 10; i++) {
      await respond('no tools needed');
      await respond(loop);
      await direct();
    }
    const without: number[] = [];
    const withRounds: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < options.samples; i++) {
      without.push(await respond('no tools needed'));
      withRounds.push(await respond(loop));
      bare.push(await direct());
    }
    for (const list of [without, withRounds, bare]) list.sort((a, b) => a - b);
    const p50 = (list: number[]) => percentile(list, 0.5);
    const report = {
      benchmark: 'mcp-round-overhead',
      environment: environmentFacts(),
      backend: stack.backend,
      rounds: options.rounds,
      samples: options.samples,
      responseMs: {
        withoutRounds: { p50: round(p50(without), 2), p99: round(percentile(without, 0.99), 2) },
        withRounds: { p50: round(p50(withRounds), 2), p99: round(percentile(withRounds, 0.99), 2) },
      },
      addedPerRoundMs: { p50: round((p50(withRounds) - p50(without)) / options.rounds, 2), target: 5 },
      bareSessionMs: { p50: round(p50(bare), 2), p99: round(percentile(bare, 0.99), 2) },
    };
    writeReport(options.output, report);
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await stack.stop();
    await mcp.close();
  }
}
