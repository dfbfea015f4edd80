import { performance } from 'node:perf_hooks';
import { startFakeAnthropic, type FakeVendorServer } from '../test/fakes';
import type { FakeScript } from '../test/fakes/fake-script';
import {
  admin,
  api,
  heldDrained,
  ledgerColumns,
  ledgerOf,
  progress,
  startService,
  stop,
  waitFinal,
  type Row,
  type Storage,
} from './service';

/** Responses per phase, all at once: half synchronous, half in the background. */
const BATCH = 60;
/** The vendor's timeout: how long a hanging vendor is waited for while its circuit is closed. */
const TIMEOUT_MS = 2_000;
/** The circuit's cool-down (ROUTE_CIRCUIT_COOL_DOWN_MS): long enough to stay open through the last phase. */
const COOL_DOWN_MS = 10_000;

/**
 * One vendor down behind a fallback route under load (issue 36). The service in its own process, a route created at
 * run time through the admin API (fake OpenAI first, fake Anthropic as its fallback), BATCH Responses at once in each
 * phase: OpenAI healthy, refusing connections, hanging (its circuit closed again after the cool-down, so the first
 * calls wait out the timeout), hanging with its circuit open. Every Response must complete, each billed once, nothing
 * held after; the notes give each phase's median and slowest latency and OpenAI's calls, from which the latency a
 * failover adds under load is read.
 */
export async function vendorDown(storage: Storage, openai: FakeVendorServer): Promise<Row> {
  const anthropic = await startFakeAnthropic();
  const service = await startService(storage, {
    OPENAI_API_KEY: 'chaos-key',
    OPENAI_BASE_URL: openai.baseURL,
    ANTHROPIC_API_KEY: 'chaos-key',
    ANTHROPIC_BASE_URL: anthropic.baseURL,
    PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS),
    ROUTE_CIRCUIT_COOL_DOWN_MS: String(COOL_DOWN_MS),
  });
  try {
    const route = await admin(service, 'POST', '/admin/routes', {
      code: 'chaos-fallback',
      type: 'llm',
      strategy: 'fallback',
      targets: [{ model: 'gpt-4.1-mini' }, { model: 'claude-haiku-4-5' }],
    });
    if (route.status !== 201) throw new Error(`the route was refused: ${JSON.stringify(route.body)}`);

    const phases: Array<[string, FakeScript]> = [
      ['healthy', {}],
      ['refusing', { resetConnection: true }],
      ['hanging', { hang: true }],
      ['hanging, circuit open', { hang: true }],
    ];
    const notes: string[] = [];
    let failed = 0;
    let stuck = 0;
    let lost = 0;
    let maxMs = 0;
    for (const [name, fault] of phases) {
      // The refusals opened OpenAI's circuit: its cool-down ends before the hang, whose first calls are waited for.
      if (name === 'hanging') await new Promise((resolve) => setTimeout(resolve, COOL_DOWN_MS + 500));
      openai.reset();
      anthropic.reset();
      openai.setDefault(fault);
      progress(`vendor-down: ${name}`);
      const started = performance.now();
      const replies = await Promise.all(
        Array.from({ length: BATCH }, async (_, index) => {
          const begun = performance.now();
          const created = await api(service, 'POST', '/v2/responses', {
            model: 'chaos-fallback',
            input: `vendor down ${name} ${index}`,
            background: index % 2 === 1,
          }).catch(() => undefined);
          if (created?.status !== 200) return { id: undefined, ms: performance.now() - begun };
          if (index % 2 === 1) await waitFinal(service, [created.body.id]);
          return { id: created.body.id as string, ms: performance.now() - begun };
        }),
      );
      const ids = replies.flatMap((reply) => (reply.id ? [reply.id] : []));
      const outcome = await waitFinal(service, ids);
      stuck += outcome.stuck.length;
      lost += outcome.lost.length + (BATCH - ids.length);
      const finals = await Promise.all(ids.map((id) => api(service, 'GET', `/v2/responses/${id}`)));
      const notCompleted = finals.filter((reply) => reply.body.status !== 'completed').length;
      failed += notCompleted;
      const models = [...new Set(finals.map((reply) => reply.body.model))].join('+');
      const ms = replies.map((reply) => reply.ms).sort((a, b) => a - b);
      maxMs = Math.max(maxMs, performance.now() - started);
      notes.push(
        `${name}: ${BATCH - notCompleted}/${BATCH} completed by ${models}, median ${Math.round(ms[BATCH / 2]!)} ms, ` +
          `slowest ${Math.round(ms.at(-1)!)} ms, ${openai.requests.length} OpenAI calls`,
      );
    }
    openai.setDefault({});
    await heldDrained(service, service.key);
    const ledger = await ledgerOf(service, service.key);
    return {
      database: storage.name,
      scenario: `vendor down behind a fallback route (${BATCH} at once per phase)`,
      operations: BATCH * phases.length,
      stuck,
      lost,
      ...ledgerColumns(ledger),
      // A Response that did not complete is this scenario's failure: a route must hide the vendor's.
      overBound: failed > 0,
      maxRecoveryMs: Math.round(maxMs),
      notes: [`${failed} failed`, ...notes].join('; '),
    };
  } finally {
    openai.setDefault({});
    await stop(service);
    await anthropic.close();
  }
}
