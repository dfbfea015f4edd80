import diagnostics from 'node:diagnostics_channel';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';

/**
 * Preloaded (`node --require`) into the service only for the peer bench's analysis phase (bench/peers.ts), never
 * into the processes whose latency the bench compares: it counts where a request's time goes without a change to
 * the service's code.
 *  - every statement on a pg client: its kind (the first words of its text), its round trip, and whether it
 *    committed (a statement outside BEGIN…COMMIT commits alone, COMMIT commits its transaction);
 *  - waits for a pool connection (`pg.Pool#connect`);
 *  - each group-committed writer (src/db/group-commit.ts): batches, items, how long an item waited for its batch
 *    to start and how long the batch's write took;
 *  - HTTP requests served and vendor calls made (diagnostics channels of node:http and undici), and the event
 *    loop's delay (monitorEventLoopDelay at 1 ms resolution).
 * The parent asks over IPC: `{probe: 'reset'}` starts a window, `{probe: 'read'}` answers `{probe: snapshot}`.
 */

interface Timing {
  count: number;
  totalMs: number;
  maxMs: number;
}
const timing = (): Timing => ({ count: 0, totalMs: 0, maxMs: 0 });
const add = (target: Timing, ms: number) => {
  target.count += 1;
  target.totalMs += ms;
  if (ms > target.maxMs) target.maxMs = ms;
};

let statements = new Map<string, Timing>();
let commits = 0;
let poolConnect = timing();
let poolWaited = 0;
let writers = new Map<string, { batches: number; items: number; wait: Timing; write: Timing }>();
let http = timing();
let vendor = timing();
const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();

function reset() {
  statements = new Map();
  commits = 0;
  poolConnect = timing();
  poolWaited = 0;
  writers = new Map();
  http = timing();
  vendor = timing();
  loop.reset();
}

const kindOf = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 60).toLowerCase();

type Query = (this: pg.Client, ...args: unknown[]) => unknown;
const inTransaction = new WeakSet<object>();
const query = pg.Client.prototype.query as unknown as Query;
(pg.Client.prototype as unknown as { query: Query }).query = function (this: pg.Client, ...args: unknown[]) {
  const config = args[0] as string | { text?: string } | undefined;
  const text = typeof config === 'string' ? config : (config?.text ?? '');
  const kind = kindOf(text);
  if (/^(begin|start transaction)/.test(kind)) inTransaction.add(this);
  else if (/^(commit|rollback|end)\b/.test(kind)) {
    inTransaction.delete(this);
    if (kind.startsWith('commit') || kind.startsWith('end')) commits += 1;
  } else if (!inTransaction.has(this)) commits += 1;
  const started = performance.now();
  const done = () => {
    let entry = statements.get(kind);
    if (!entry) statements.set(kind, (entry = timing()));
    add(entry, performance.now() - started);
  };
  const callbackAt = args.findIndex((arg) => typeof arg === 'function');
  if (callbackAt >= 0) {
    const callback = args[callbackAt] as (...results: unknown[]) => void;
    args[callbackAt] = (...results: unknown[]) => {
      done();
      callback(...results);
    };
    return query.apply(this, args);
  }
  const result = query.apply(this, args);
  if (result && typeof (result as Promise<unknown>).then === 'function') (result as Promise<unknown>).then(done, done);
  return result;
};

type Connect = (this: pg.Pool, ...args: unknown[]) => unknown;
const connect = pg.Pool.prototype.connect as unknown as Connect;
(pg.Pool.prototype as unknown as { connect: Connect }).connect = function (this: pg.Pool, ...args: unknown[]) {
  if (args.length > 0) return connect.apply(this, args);
  const started = performance.now();
  if (this.waitingCount > 0 || (this.idleCount === 0 && this.totalCount >= (this.options.max ?? 10))) poolWaited += 1;
  const result = connect.apply(this, args) as Promise<unknown>;
  result.then(
    () => add(poolConnect, performance.now() - started),
    () => undefined,
  );
  return result;
};

// The service's group commits: the module's export is read at each call (CommonJS output), so replacing it before
// the service loads wraps every writer the service creates.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const groupCommitModule = require('../src/db/group-commit') as {
  createGroupCommit: <I, O>(options: {
    write: (items: I[]) => Promise<O[]>;
    maxBatch: number;
  }) => (item: I) => Promise<O>;
};
const createGroupCommit = groupCommitModule.createGroupCommit;
groupCommitModule.createGroupCommit = <I, O>(options: { write: (items: I[]) => Promise<O[]>; maxBatch: number }) => {
  // The writer's name: the file and line that created it.
  const caller = (new Error().stack ?? '').split('\n')[2] ?? '';
  const name = /([\w.-]+\.js):(\d+)/.exec(caller)?.slice(1, 3).join(':') ?? 'unknown';
  const submittedAt = new WeakMap<object, number>();
  const stats = () => {
    let entry = writers.get(name);
    if (!entry) writers.set(name, (entry = { batches: 0, items: 0, wait: timing(), write: timing() }));
    return entry;
  };
  const submit = createGroupCommit<I, O>({
    ...options,
    write: async (items) => {
      const started = performance.now();
      const entry = stats();
      entry.batches += 1;
      entry.items += items.length;
      for (const item of items) {
        const at = typeof item === 'object' && item !== null ? submittedAt.get(item) : undefined;
        if (at !== undefined) add(entry.wait, started - at);
      }
      try {
        return await options.write(items);
      } finally {
        add(stats().write, performance.now() - started);
      }
    },
  });
  return (item: I) => {
    if (typeof item === 'object' && item !== null) submittedAt.set(item, performance.now());
    return submit(item);
  };
};

const requestStarts = new WeakMap<object, number>();
diagnostics.subscribe('http.server.request.start', (message) => {
  requestStarts.set((message as { response: object }).response, performance.now());
});
diagnostics.subscribe('http.server.response.finish', (message) => {
  const started = requestStarts.get((message as { response: object }).response);
  if (started !== undefined) add(http, performance.now() - started);
});
const vendorStarts = new WeakMap<object, number>();
diagnostics.subscribe('undici:request:create', (message) => {
  vendorStarts.set((message as { request: object }).request, performance.now());
});
diagnostics.subscribe('undici:request:trailers', (message) => {
  const started = vendorStarts.get((message as { request: object }).request);
  if (started !== undefined) add(vendor, performance.now() - started);
});

const ms = (nanoseconds: number) => Math.round(nanoseconds / 1e3) / 1e3;
const wire = (entry: Timing) => ({
  count: entry.count,
  total_ms: Math.round(entry.totalMs * 1000) / 1000,
  max_ms: Math.round(entry.maxMs * 1000) / 1000,
});

export type ProbeSnapshot = ReturnType<typeof snapshot>;
function snapshot() {
  return {
    statements: Object.fromEntries([...statements].map(([kind, entry]) => [kind, wire(entry)])),
    commits,
    pool_connect: wire(poolConnect),
    pool_connects_that_waited: poolWaited,
    group_commits: Object.fromEntries(
      [...writers].map(([name, entry]) => [
        name,
        { batches: entry.batches, items: entry.items, wait: wire(entry.wait), write: wire(entry.write) },
      ]),
    ),
    http_requests: wire(http),
    vendor_calls: wire(vendor),
    event_loop_delay_ms: {
      p50: ms(loop.percentile(50)),
      p99: ms(loop.percentile(99)),
      max: ms(loop.max),
      mean: ms(loop.mean),
    },
  };
}

process.on('message', (message: { probe?: string }) => {
  if (message?.probe === 'reset') reset();
  else if (message?.probe === 'read') process.send?.({ probe: snapshot() });
});
