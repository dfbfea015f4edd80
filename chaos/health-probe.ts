import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** The probes' tallies: the slowest answer, how many were sent and how many failed (no 200 within 10 s). */
export interface Tally {
  max: number;
  count: number;
  failed: number;
}

export interface HealthProbes extends Tally {
  kept: Tally;
  fresh: Tally;
  freshApi: Tally;
  /** This process's own longest event-loop delay (ms): what of a probe's time may be the prober's own. */
  proberLagMs: number;
}

/**
 * GET /healthz back to back until stopped (each waits for the last: the probe is the loop, not a timer), alternately
 * on a kept-alive connection to the API's listener and on a new connection to the operators' listener, as a load
 * balancer's check may be. Both are budgeted. Beside it, a new connection to the API's listener every second, whose
 * wait is reported, not budgeted: libuv accepts one connection per listener per turn of the event loop, so a new
 * API connection waits behind the attack's new connections (see OPS_PORT in src/config.ts).
 */
export function probeHealth(apiUrl: string, operationsUrl: string) {
  let running = true;
  const kept = { max: 0, count: 0, failed: 0 };
  const fresh = { max: 0, count: 0, failed: 0 };
  const freshApi = { max: 0, count: 0, failed: 0 };
  // One connection of its own, opened before the attack and kept: a pooled fetch would open a new one whenever the
  // attack's requests hold the pool's, and wait in the accept queue like any new connection.
  const keptAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (url: URL, agent: http.Agent | false) =>
    new Promise<boolean>((resolve) => {
      const request = http.get(url, { agent, timeout: 10_000 }, (reply) => {
        reply.resume();
        reply.once('end', () => resolve(reply.statusCode === 200));
      });
      request.once('timeout', () => request.destroy());
      request.once('error', () => resolve(false));
    });
  const timed = async (tally: typeof kept, probe: () => Promise<boolean>) => {
    const started = performance.now();
    const ok = await probe();
    tally.max = Math.max(tally.max, performance.now() - started);
    tally.count++;
    if (!ok) tally.failed++;
  };
  const keptUrl = new URL('/healthz', apiUrl);
  const loop = (async () => {
    for (let probe = 0; running; probe++) {
      if (probe % 2 === 0) {
        await timed(kept, () => get(keptUrl, keptAgent));
      } else {
        await timed(fresh, () => get(new URL('/healthz', operationsUrl), false));
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const apiLoop = (async () => {
    while (running) {
      await timed(freshApi, () => get(keptUrl, false));
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  return {
    async stop(): Promise<Omit<HealthProbes, 'proberLagMs'>> {
      running = false;
      await Promise.all([loop, apiLoop]);
      keptAgent.destroy();
      return {
        max: Math.max(kept.max, fresh.max),
        count: kept.count + fresh.count,
        failed: kept.failed + fresh.failed,
        kept,
        fresh,
        freshApi,
      };
    },
  };
}

/**
 * Run as a process of its own by the hostile-input scenario (`node health-probe.js <apiUrl> <operationsUrl>`):
 * probes until its parent sends 'stop', then sends the tallies back and exits.
 */
if (require.main === module && process.send) {
  const [apiUrl, operationsUrl] = process.argv.slice(2) as [string, string];
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const probes = probeHealth(apiUrl, operationsUrl);
  process.once('message', async () => {
    const tallies = await probes.stop();
    lag.disable();
    process.send!({ ...tallies, proberLagMs: Math.round(lag.max / 1e6) }, () => process.exit(0));
  });
  process.once('disconnect', () => process.exit(0));
}
