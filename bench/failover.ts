import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { startFakeAnthropic, startFakeOpenAI } from '../test/fakes';
import type { FakeScript } from '../test/fakes/fake-script';
import { environmentFacts, percentile, round, startBenchStack, writeReport } from './support';

/**
 * What a failover adds (issue 36), on loopback, one request at a time. A fallback route (fake OpenAI first, fake
 * Anthropic after it, both answering at once) created through the admin API; its circuit never opens here
 * (ROUTE_CIRCUIT_FAILURES very high), so every request to the route pays the failed call. Interleaved samples of a
 * synchronous Response and a chat completion: straight to Anthropic's model (the baseline), and through the route
 * while OpenAI refuses the connection and while it answers 503. Added latency = p50 through the route − p50 direct:
 * the failed call, and for a Response the recorded plan and failover steps. With the circuit open the failed call is
 * skipped (the circuit test measures that; chaos/vendor-down.ts under load).
 */
export async function runFailoverBench(options: {
  pglite: boolean;
  postgresUrl: string;
  samples: number;
  output: string;
}) {
  const [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
  const adminToken = randomBytes(24).toString('hex');
  const stack = await startBenchStack({
    pin: false,
    pglite: options.pglite,
    postgresUrl: options.postgresUrl,
    extraEnv: {
      ADMIN_TOKEN: adminToken,
      OPENAI_API_KEY: 'bench-key',
      OPENAI_BASE_URL: openai.baseURL,
      ANTHROPIC_API_KEY: 'bench-key',
      ANTHROPIC_BASE_URL: anthropic.baseURL,
      ROUTE_CIRCUIT_FAILURES: '1000',
    },
  });
  try {
    const route = await fetch(`${stack.base}/admin/routes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        code: 'bench-fallback',
        type: 'llm',
        targets: [{ model: 'gpt-4.1-mini' }, { model: 'claude-haiku-4-5' }],
      }),
    });
    if (route.status !== 201) throw new Error(`the route was refused: ${await route.text()}`);

    /** One call (a synchronous Response or a chat completion) with OpenAI doing `fault`; its time, checked. */
    const call = async (surface: 'responses' | 'chat', model: string, fault: FakeScript) => {
      openai.reset();
      anthropic.reset();
      openai.setDefault(fault);
      const started = performance.now();
      const reply = await fetch(`${stack.base}/v2/${surface === 'responses' ? 'responses' : 'chat/completions'}`, {
        method: 'POST',
        headers: { 'x-auth-token': stack.key, 'content-type': 'application/json' },
        body: JSON.stringify(
          surface === 'responses'
            ? { model, input: 'hello', background: false }
            : { model, messages: [{ role: 'user', content: 'hello' }] },
        ),
      });
      const body = (await reply.json()) as { status?: string; model?: string };
      const ms = performance.now() - started;
      if (reply.status !== 200 || (surface === 'responses' && body.status !== 'completed'))
        throw new Error(`${surface} answered ${reply.status}: ${JSON.stringify(body)}`);
      if (body.model !== 'claude-haiku-4-5') throw new Error(`served by ${body.model}, not the fallback`);
      return ms;
    };
    const cases = {
      direct: (surface: 'responses' | 'chat') => call(surface, 'claude-haiku-4-5', {}),
      refused: (surface: 'responses' | 'chat') => call(surface, 'bench-fallback', { resetConnection: true }),
      status503: (surface: 'responses' | 'chat') => call(surface, 'bench-fallback', { status: 503 }),
    };
    const surfaces = ['responses', 'chat'] as const;
    for (let i = 0; i < 10; i++)
      for (const surface of surfaces) for (const run of Object.values(cases)) await run(surface);
    const times = Object.fromEntries(
      surfaces.map((surface) => [
        surface,
        { direct: [] as number[], refused: [] as number[], status503: [] as number[] },
      ]),
    ) as Record<(typeof surfaces)[number], Record<keyof typeof cases, number[]>>;
    for (let i = 0; i < options.samples; i++) {
      for (const surface of surfaces) {
        for (const [name, run] of Object.entries(cases) as [
          keyof typeof cases,
          (s: typeof surface) => Promise<number>,
        ][])
          times[surface][name].push(await run(surface));
      }
    }
    const stats = (list: number[]) => {
      const sorted = [...list].sort((a, b) => a - b);
      return { p50: round(percentile(sorted, 0.5), 2), p99: round(percentile(sorted, 0.99), 2) };
    };
    const report = {
      benchmark: 'route-failover-latency',
      environment: environmentFacts(),
      backend: stack.backend,
      samples: options.samples,
      ...Object.fromEntries(
        surfaces.map((surface) => {
          const direct = stats(times[surface].direct);
          const refused = stats(times[surface].refused);
          const status503 = stats(times[surface].status503);
          return [
            surface,
            {
              directMs: direct,
              failoverAfterRefusedConnectionMs: refused,
              failoverAfter503Ms: status503,
              addedMs: {
                refusedConnectionP50: round(refused.p50 - direct.p50, 2),
                status503P50: round(status503.p50 - direct.p50, 2),
              },
            },
          ];
        }),
      ),
    };
    writeReport(options.output, report);
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await stack.stop();
    await Promise.all([openai.close(), anthropic.close()]);
  }
}
