import { fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import type { HealthProbes } from './health-probe';
import { startMcpTestServer } from '../test/mcp/mcp-test-server';
import { streamTranscription, toneWav, wavHeader } from '../test/audio/audio-fixtures';
import {
  ADMIN_TOKEN,
  admin,
  api,
  heldDrained,
  ledgerColumns,
  ledgerOf,
  newAccount,
  progress,
  startService,
  stop,
  waitFinal,
  type Row,
  type Service,
  type Storage,
} from './service';

/**
 * Everything the attack audit threw at one process, at once, with /healthz probed back to back throughout and the
 * API process's memory sampled: crafted WAVs (24.8 MiB declaring 1 Hz, 1 channel, 8 bits) to the synchronous and
 * asynchronous dev models, NUL in fields Postgres cannot store, bodies trickled a byte at a time (with and without
 * a key), clients that never read a page of large conversation items, background Responses whose webhook receiver
 * never answers, and Responses whose MCP server lists 128 tools of 1 MiB. A bystander account's background
 * Responses are timed before and during the attack.
 *
 * Holds: /healthz within HEALTH_BUDGET_MS throughout; the API's resident memory under RSS_BOUND_MB; every attack
 * refused or cut as designed; nothing held after; no failed or refused operation billed; the ledger exact.
 */
const HEALTH_BUDGET_MS = 1000;
/** The API process's resident memory at its peak (idle, it sits at 150-250 MB). */
const RSS_BOUND_MB = 1024;
const CRAFTED_BYTES = Math.round(24.8 * (1 << 20));

export async function hostileInput(storage: Storage): Promise<Row> {
  const mcp = await startMcpTestServer();
  const receiver = await startHangingReceiver();
  const service = await startService(storage, { OPS_PORT: '0' });
  const memory = sampleMemory(service.child.pid!);
  try {
    const attacker = await newAccount(service, 1_000_000);
    const bystander = await newAccount(service, 1_000_000);
    await admin(service, 'PATCH', `/admin/accounts/${attacker.accountId}`, { mcp_enabled: true });
    const baselineMs = await bystanderRound(service, bystander.key);

    const health = probeHealth(service.baseUrl, service.operationsUrl!);
    const loop = sampleLongestTurn(service.operationsUrl!);
    const conversation = await largeConversation(service, attacker.key);
    const findings: string[] = [];
    const expect = (what: string, ok: boolean) => (ok ? undefined : findings.push(what));

    const [crafted, nul, tricklers, readers, webhooks, listings, duringMs] = await Promise.all([
      craftedWavs(service, attacker.key),
      nulFields(service, attacker.key),
      trickleBodies(service, attacker.key, 150),
      nonReaders(service, attacker.key, conversation, 100),
      hangingWebhooks(service, attacker.key, receiver.url, 200),
      oversizedListings(service, attacker.key, `${mcp.url}/huge/mcp`, 3),
      bystanderRound(service, bystander.key),
    ]);
    const healthMs = await health.stop();
    const longestTurnMs = await loop.stop();
    expect(
      `crafted WAVs answered ${crafted.join(',')}`,
      crafted.every((status) => status === 400),
    );
    expect(
      `NUL fields answered ${nul.join(',')}`,
      nul.every((status) => status === 400),
    );
    expect(`${tricklers.notCut} of ${tricklers.total} tricklers not cut within 30 s`, tricklers.notCut === 0);
    expect(
      `${readers.notClosed} of ${readers.total} non-reading clients still connected after 60 s`,
      readers.notClosed === 0,
    );
    expect(
      `webhook Responses created ${webhooks.ids.length} of ${webhooks.total}`,
      webhooks.ids.length === webhooks.total,
    );
    expect(
      `MCP listings: ${listings.statuses.join(',')}`,
      listings.statuses.every((status) => status === 'completed'),
    );

    const responseIds = [...webhooks.ids, ...listings.ids];
    const settled = await waitFinal(service, responseIds, attacker.key);
    const heldMs = Math.max(await heldDrained(service, attacker.key), await heldDrained(service, bystander.key));
    const billedFailures = await failuresBilled(service, attacker.key);
    const attackerLedger = await ledgerOf(service, attacker.key);
    const bystanderLedger = await ledgerOf(service, bystander.key);
    const peakRssMb = memory.stop();
    const overBound =
      healthMs.max > HEALTH_BUDGET_MS || healthMs.failed > 0 || peakRssMb > RSS_BOUND_MB || findings.length > 0;
    const columns = ledgerColumns(attackerLedger);
    return {
      database: storage.name,
      scenario: 'hostile input (crafted WAV, NUL, slow bodies, non-readers, hanging webhooks, huge MCP listing)',
      operations: crafted.length + nul.length + tricklers.total + readers.total + webhooks.total + listings.ids.length,
      stuck: settled.stuck.length,
      lost: settled.lost.length,
      ...columns,
      heldAfter: columns.heldAfter + ledgerColumns(bystanderLedger).heldAfter,
      ledgerMismatch: columns.ledgerMismatch + bystanderLedger.mismatch,
      maxRecoveryMs: Math.max(settled.ms, heldMs),
      maxHealthMs: Math.round(healthMs.max),
      billedFailures,
      overBound,
      notes: [
        `/healthz ${healthMs.count} probes, max ${Math.round(healthMs.kept.max)} ms on a kept-alive API connection and ${Math.round(healthMs.fresh.max)} ms on new connections to the operators' listener (budget ${HEALTH_BUDGET_MS}), ${healthMs.failed} failed`,
        `new API connections (${healthMs.freshApi.count}, not budgeted): max ${Math.round(healthMs.freshApi.max)} ms, ${healthMs.freshApi.failed} not answered in 10 s`,
        `the prober's own longest event-loop delay ${healthMs.proberLagMs} ms`,
        `longest event-loop turn ${longestTurnMs} ms (the delay monitorEventLoopDelay saw, as /metrics reports it)`,
        `peak RSS ${peakRssMb} MB (bound ${RSS_BOUND_MB})`,
        `bystander's 10 background Responses ${baselineMs} ms before, ${duringMs} ms during`,
        `tricklers cut in ${tricklers.slowestCutMs} ms at most`,
        `non-readers' connections closed by the server: ${readers.closedByServer}`,
        ...findings,
      ].join('; '),
    };
  } finally {
    memory.stop();
    await stop(service);
    await receiver.close();
    await mcp.close();
  }
}

/** Ten background Responses of the bystander, created at once: the ms until all have completed. */
async function bystanderRound(service: Service, key: string): Promise<number> {
  const started = Date.now();
  const created = await Promise.all(
    Array.from({ length: 10 }, () =>
      api(service, 'POST', '/v2/responses', { model: 'dev-echo', input: '/words 5' }, key),
    ),
  );
  await waitFinal(
    service,
    created.filter((reply) => reply.status === 200).map((reply) => reply.body.id as string),
    key,
  );
  return Date.now() - started;
}

/**
 * The /healthz probes (chaos/health-probe.ts) in a process of their own, as a load balancer's checks are: probes sent
 * from this process, which drives the whole attack, waited for its own event loop too (a probe timed here took
 * 4.5 s while the API's longest turn was 0.4 s).
 */
function probeHealth(apiUrl: string, operationsUrl: string) {
  const child = fork(path.join(__dirname, 'health-probe.js'), [apiUrl, operationsUrl], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const result = new Promise<HealthProbes>((resolve, reject) => {
    child.once('message', (message) => resolve(message as HealthProbes));
    child.once('exit', (code) => reject(new Error(`the health probe exited (${code}) before it reported`)));
  });
  return {
    async stop() {
      child.send('stop');
      return result;
    },
  };
}

/**
 * The API process's longest event-loop turn while the attack runs: nodejs_eventloop_lag_max_seconds (prom-client's
 * monitorEventLoopDelay, reset at each scrape) read from the operators' listener every half second.
 */
function sampleLongestTurn(operationsUrl: string) {
  let running = true;
  let longest = 0;
  const loop = (async () => {
    // The first reading covers the time since the last scrape, start-up included: a reset only.
    for (let scrape = 0; running; scrape++) {
      try {
        const reply = await fetch(`${operationsUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        const seconds = Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(await reply.text())?.[1] ?? 0);
        if (scrape > 0) longest = Math.max(longest, seconds * 1000);
      } catch {
        // A scrape the attack made fail: the next one reads the maximum since the last that answered.
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return Math.round(longest);
    },
  };
}

/** The peak resident memory (VmHWM) of a process, in MB, read from /proc when stopped. */
function sampleMemory(pid: number) {
  let peak = 0;
  const read = () => {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      peak = Math.max(peak, Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024);
    } catch {
      // Not Linux, or the process is gone: the last reading stands.
    }
    return Math.round(peak);
  };
  const timer = setInterval(read, 500).unref();
  return {
    stop() {
      clearInterval(timer);
      return read();
    },
  };
}

/** Two crafted WAVs to each of dev-stt and dev-stt-async: their statuses. */
async function craftedWavs(service: Service, key: string): Promise<number[]> {
  const head = wavHeader({ sampleRate: 1, channels: 1, bits: 8, totalBytes: CRAFTED_BYTES });
  const replies = await Promise.all(
    ['dev-stt', 'dev-stt', 'dev-stt-async', 'dev-stt-async'].map((model) =>
      streamTranscription(
        service.baseUrl,
        key,
        { model },
        { name: 'crafted.wav', head, fillBytes: CRAFTED_BYTES - head.length },
      ),
    ),
  );
  return replies.map((reply) => reply.status);
}

/** NUL in an async transcription's meta, prompt and source, and in a Response's input: their statuses. */
async function nulFields(service: Service, key: string): Promise<number[]> {
  const wav = toneWav(1, [[0.2, 0.6]]);
  const fields: Array<Record<string, string>> = [
    { model: 'dev-stt-async', meta: JSON.stringify({ note: 'a\u0000b' }) },
    { model: 'dev-stt-async', prompt: 'a\u0000b' },
    { model: 'dev-stt-async', source: 'a\u0000b' },
  ];
  const transcriptions = await Promise.all(
    fields.map((form) =>
      streamTranscription(service.baseUrl, key, form, { name: 'tone.wav', head: wav, fillBytes: 0 }),
    ),
  );
  const responses = await Promise.all(
    Array.from({ length: 5 }, () =>
      api(service, 'POST', '/v2/responses', { model: 'dev-echo', input: 'a\u0000b' }, key),
    ),
  );
  return [...transcriptions.map((reply) => reply.status), ...responses.map((reply) => reply.status)];
}

/**
 * `count` connections announcing a 9 MB body and sending a byte every 2 s: half with a key (to /v2/responses),
 * half without (to /healthz). Each must be cut (a 408, or closed after an early answer).
 */
async function trickleBodies(service: Service, key: string, count: number) {
  const port = Number(new URL(service.baseUrl).port);
  const started = Date.now();
  let slowestCutMs = 0;
  const cut = await Promise.all(
    Array.from(
      { length: count },
      (_, index) =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect(port, '127.0.0.1');
          const path = index % 2 === 0 ? '/v2/responses' : '/healthz';
          const auth = index % 2 === 0 ? `x-auth-token: ${key}\r\n` : '';
          socket.on('error', () => undefined);
          socket.on('data', () => undefined);
          socket.once('connect', () =>
            socket.write(
              `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}content-type: application/json\r\ncontent-length: 9000000\r\n\r\n{`,
            ),
          );
          const drip = setInterval(() => socket.writable && socket.write(' '), 2000);
          const deadline = setTimeout(() => (socket.destroy(), resolve(false)), 30_000);
          socket.once('close', () => {
            clearInterval(drip);
            clearTimeout(deadline);
            slowestCutMs = Math.max(slowestCutMs, Date.now() - started);
            resolve(true);
          });
        }),
    ),
  );
  return { total: count, notCut: cut.filter((ok) => !ok).length, slowestCutMs };
}

/** A conversation of 80 items of 450 KB: a page of them is 4 MiB. */
async function largeConversation(service: Service, key: string): Promise<string> {
  const created = await api(service, 'POST', '/v2/conversations', {}, key);
  const item = { type: 'message', role: 'user', content: 'q'.repeat(450 * 1000) };
  for (let index = 0; index < 80; index += 10) {
    await api(
      service,
      'POST',
      `/v2/conversations/${created.body.id}/items`,
      { items: Array.from({ length: 10 }, () => item) },
      key,
    );
  }
  return created.body.id as string;
}

/**
 * `count` clients asking for a page of 100 items (4 MiB) and never reading it: each must be closed by the server
 * (given up as a stalled reply, or closed once idle when the kernel had taken the whole page). A client that
 * reads nothing cannot see its connection close, so after a minute each starts reading, and must see the end.
 */
async function nonReaders(service: Service, key: string, conversationId: string, count: number) {
  const port = Number(new URL(service.baseUrl).port);
  const request = `GET /v2/conversations/${conversationId}/items?limit=100 HTTP/1.1\r\nHost: x\r\nx-auth-token: ${key}\r\n\r\n`;
  const closed = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect(port, '127.0.0.1');
          socket.on('error', () => undefined);
          socket.pause();
          socket.once('connect', () => socket.write(request));
          // After a minute it reads: a connection the server closed ends (short of the page, or whole if the kernel
          // had taken it all); one it kept stays open.
          const check = setTimeout(() => {
            socket.on('data', () => undefined);
            socket.resume();
            setTimeout(() => (socket.destroy(), resolve(false)), 5000).unref();
          }, 60_000);
          socket.once('close', () => {
            clearTimeout(check);
            resolve(true);
          });
        }),
    ),
  );
  const metrics = await (
    await fetch(`${service.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  ).text();
  const closedByServer = [
    ...metrics.matchAll(/switchyard_http_connections_closed_total\{reason="(stalled_reply|unsent_budget)"\} (\d+)/g),
  ].map((match) => `${match[2]} ${match[1]}`);
  return {
    total: count,
    notClosed: closed.filter((ok) => !ok).length,
    closedByServer: closedByServer.join(', ') || 'none',
  };
}

/** `count` cheap background Responses whose webhook goes to a receiver that never answers. */
async function hangingWebhooks(service: Service, key: string, receiverUrl: string, count: number) {
  const replies = await Promise.all(
    Array.from({ length: count }, () =>
      api(
        service,
        'POST',
        '/v2/responses',
        { model: 'dev-echo', input: 'hi', metadata: { webhook_url: receiverUrl } },
        key,
      ),
    ),
  );
  return { total: count, ids: replies.filter((reply) => reply.status === 200).map((reply) => reply.body.id as string) };
}

/** Responses with an MCP server listing 128 tools of 1 MiB: each ends, the listing cut at its budget. */
async function oversizedListings(service: Service, key: string, serverUrl: string, count: number) {
  const tool = { type: 'mcp', server_label: 'huge', server_url: serverUrl, require_approval: 'never' };
  const replies = await Promise.all(
    Array.from({ length: count }, () =>
      api(service, 'POST', '/v2/responses', { model: 'dev-echo', input: 'hi', tools: [tool], background: false }, key),
    ),
  );
  return {
    ids: replies.filter((reply) => reply.status === 200).map((reply) => reply.body.id as string),
    statuses: replies.map((reply) => reply.body.status ?? reply.status),
  };
}

/**
 * Failures billed: debits of Responses that ended failed or cancelled, and any debit for a transcription (every
 * upload of the attack is refused). Reads all of the account's transactions.
 */
async function failuresBilled(service: Service, key: string): Promise<number> {
  const { transactions } = await ledgerOf(service, key);
  const debits = transactions.filter((entry) => entry.type === 'debit');
  let billed = debits.filter((debit) => debit.metadata.service === 'transcription').length;
  for (const debit of debits) {
    if (typeof debit.metadata.response_id !== 'string') continue;
    const { body } = await api(service, 'GET', `/v2/responses/${debit.metadata.response_id}`, undefined, key);
    if (body.status === 'failed' || body.status === 'cancelled') billed++;
  }
  progress(`hostile input: ${debits.length} debits, ${billed} of them for failures`);
  return billed;
}

/** A webhook receiver that accepts connections and requests and never answers them. */
async function startHangingReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = http.createServer(() => undefined);
  server.on('connection', (socket) => (sockets.add(socket), socket.once('close', () => sockets.delete(socket))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: async () => {
      sockets.forEach((socket) => socket.destroy());
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
