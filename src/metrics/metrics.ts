import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from '../logger';
import type { VendorCallObserver } from '../providers/observed-provider';

/**
 * The service's Prometheus metrics (GET /metrics), one registry per runtime (no module singleton: tests run
 * several apps in one process). Labels are bounded: route templates, catalog model and vendor codes, statuses
 * and error kinds; never an id, a key or a user-chosen string.
 */
export function createMetrics(options: { processMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const seconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
  const registers = [registry];
  /** The vendors whose circuit is open now (routing/circuits.ts), once the runtime has its circuits. */
  let openCircuits: () => string[] = () => [];

  const metrics = {
    registry,
    httpRequestDuration: new Histogram({
      name: 'switchyard_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status: count and time to the last byte of the reply (of the stream, for SSE)',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: seconds,
      registers,
    }),
    jobsStarted: new Counter({
      name: 'switchyard_jobs_started_total',
      help: 'Durable jobs created, by kind (response, run, transcription), model and vendor',
      labelNames: ['kind', 'model', 'vendor'] as const,
      registers,
    }),
    jobsFinished: new Counter({
      name: 'switchyard_jobs_finished_total',
      help: 'Durable jobs that reached a final status, by kind, status, model and vendor',
      labelNames: ['kind', 'status', 'model', 'vendor'] as const,
      registers,
    }),
    engineClaimLag: new Histogram({
      name: 'switchyard_engine_claim_lag_seconds',
      help: 'Embedded engine: time from a job being written to its first claim by a worker (0 when created claimed)',
      labelNames: ['kind'] as const,
      buckets: seconds,
      registers,
    }),
    engineReclaimed: new Counter({
      name: 'switchyard_engine_jobs_reclaimed_total',
      help: 'Embedded engine: jobs claimed again after a retry, a sleep, or their owner dying (a takeover)',
      labelNames: ['kind'] as const,
      registers,
    }),
    streamsHandedOver: new Counter({
      name: 'switchyard_streams_handed_over_total',
      help: 'Event streams ended cleanly by a shutdown (their clients resume them on another process with starting_after)',
      registers,
    }),
    drains: new Counter({
      name: 'switchyard_drains_total',
      help: 'Shutdowns by outcome: drained (every running job ended within the grace) or handed_over (some were left to the next process)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    generationsResumed: new Counter({
      name: 'switchyard_generations_resumed_total',
      help: 'Model turns run again after their process died: continued (the vendor went on from the streamed text), regenerated (the streamed message closed incomplete, answered anew), rerun (nothing streamed yet)',
      labelNames: ['vendor', 'how'] as const,
      registers,
    }),
    lostAttemptTokens: new Counter({
      name: 'switchyard_lost_attempt_output_tokens_total',
      help: 'Output tokens (estimated, 4 characters each) a vendor produced in attempts that died before reporting usage: paid to the vendor, not billed',
      labelNames: ['vendor'] as const,
      registers,
    }),
    engineAbandoned: new Counter({
      name: 'switchyard_engine_jobs_abandoned_total',
      help: 'Embedded engine: jobs given up after their last attempt failed (finalised as failed)',
      labelNames: ['kind'] as const,
      registers,
    }),
    temporalStarts: new Counter({
      name: 'switchyard_temporal_workflow_starts_total',
      help: 'Temporal: workflow starts this process made (a repeated launch of a running one included), by whether the start was eager (its first workflow task answered with the start, to a worker of this process) or its task went through matching',
      labelNames: ['eager'] as const,
      registers,
    }),
    engineJobs: new Gauge({
      name: 'switchyard_engine_jobs',
      help: 'Jobs not yet final, by kind and state (pending: queued or waiting for a retry; running), read from the database at scrape',
      labelNames: ['kind', 'state'] as const,
      registers,
    }),
    engineOldestPending: new Gauge({
      name: 'switchyard_engine_oldest_pending_seconds',
      help: 'Age of the oldest pending job, read from the database at scrape (0 when none): a queue that is not drained grows it',
      registers,
    }),
    vendorCallDuration: new Histogram({
      name: 'switchyard_vendor_call_duration_seconds',
      help: 'Vendor calls by vendor, kind (language, embedding, speech, transcription) and outcome (ok or the error kind)',
      labelNames: ['vendor', 'kind', 'outcome'] as const,
      buckets: seconds,
      registers,
    }),
    vendorTimeToFirstToken: new Histogram({
      name: 'switchyard_vendor_time_to_first_token_seconds',
      help: 'Streamed language model calls: time from the call to its first text or tool call, by vendor',
      labelNames: ['vendor'] as const,
      buckets: seconds,
      registers,
    }),
    vendorErrors: new Counter({
      name: 'switchyard_vendor_errors_total',
      help: 'Failed vendor calls by vendor, kind and error kind (auth, rate_limit, server, timeout, network, malformed, ...)',
      labelNames: ['vendor', 'kind', 'error'] as const,
      registers,
    }),
    vendorKeyCalls: new Counter({
      name: 'switchyard_vendor_keyed_calls_total',
      help: 'Calls of a vendor with several keys, by vendor, key (its position in the setting, #1, #2, ...) and outcome',
      labelNames: ['vendor', 'key', 'outcome'] as const,
      registers,
    }),
    routeFailovers: new Counter({
      name: 'switchyard_route_failovers_total',
      help: 'Requests to a route moved from a failed target to the next, by route, reason (the failure kind) and the two models',
      labelNames: ['route', 'reason', 'from', 'to'] as const,
      registers,
    }),
    routeServed: new Counter({
      name: 'switchyard_route_served_total',
      help: 'Requests to a route, by route and the target model that served them',
      labelNames: ['route', 'model'] as const,
      registers,
    }),
    routeOpenCircuits: new Gauge({
      name: 'switchyard_route_open_circuits',
      help: "Vendors whose circuit is open at scrape (1 each): routes skip them until the cool-down's trial call succeeds",
      labelNames: ['vendor'] as const,
      registers,
      collect() {
        this.reset();
        for (const vendor of openCircuits()) this.set({ vendor }, 1);
      },
    }),
    /** Where routeOpenCircuits reads the open circuits from (the runtime's, set at its start). */
    watchCircuits(source: () => string[]): void {
      openCircuits = source;
    },
    billedKopecks: new Counter({
      name: 'switchyard_billed_kopecks_total',
      help: 'Kopecks debited, by model and service',
      labelNames: ['model', 'service'] as const,
      registers,
    }),
    billedTokens: new Counter({
      name: 'switchyard_billed_tokens_total',
      help: 'Tokens billed, by model and direction (input, output)',
      labelNames: ['model', 'direction'] as const,
      registers,
    }),
    openStreams: new Gauge({
      name: 'switchyard_sse_open_streams',
      help: 'Server-Sent Event streams open now',
      registers,
    }),
    connectionsClosed: new Counter({
      name: 'switchyard_http_connections_closed_total',
      help: 'Connections the server closed itself, by reason (idle, evicted, slow_body, stalled_reply, unsent_budget)',
      labelNames: ['reason'] as const,
      registers,
    }),
    webhookDeliveries: new Counter({
      name: 'switchyard_webhook_deliveries_total',
      help: 'Webhook attempts by outcome (delivered, failed)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    groupCommitBatch: new Histogram({
      name: 'switchyard_group_commit_batch_size',
      help: 'Items per group-committed write (one statement, one commit), by writer',
      labelNames: ['writer'] as const,
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers,
    }),
  };
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;

/** One debit into the billed counters: its kopecks by model and service, its tokens by model. */
export function recordBilled(
  metrics: Metrics | undefined,
  debit: { model: string; service: string; amount: number; inputTokens?: number; outputTokens?: number },
): void {
  if (!metrics) return;
  metrics.billedKopecks.inc({ model: debit.model, service: debit.service }, debit.amount);
  if (debit.inputTokens) metrics.billedTokens.inc({ model: debit.model, direction: 'input' }, debit.inputTokens);
  if (debit.outputTokens) metrics.billedTokens.inc({ model: debit.model, direction: 'output' }, debit.outputTokens);
}

/** A job created: by kind, with its model's code and vendor. */
export function recordJobStarted(
  metrics: Metrics | undefined,
  kind: string,
  model: { code: string; vendor: string } | undefined,
): void {
  metrics?.jobsStarted.inc({ kind, model: model?.code ?? 'unknown', vendor: model?.vendor ?? 'unknown' });
}

/** A job finished: its final status, with its model's code and vendor. */
export function recordJobFinished(
  metrics: Metrics | undefined,
  kind: string,
  status: string,
  model: { code: string; vendor: string } | undefined,
): void {
  metrics?.jobsFinished.inc({ kind, status, model: model?.code ?? 'unknown', vendor: model?.vendor ?? 'unknown' });
}

/** Vendor calls into the metrics, and one debug log line each (vendor, model, outcome, timings; never a prompt). */
export function vendorCallObserver(metrics: Metrics, logger: Logger): VendorCallObserver {
  return (call) => {
    metrics.vendorCallDuration.observe({ vendor: call.vendor, kind: call.kind, outcome: call.outcome }, call.seconds);
    if (call.firstTokenSeconds !== undefined)
      metrics.vendorTimeToFirstToken.observe({ vendor: call.vendor }, call.firstTokenSeconds);
    if (call.outcome !== 'ok' && call.outcome !== 'cancelled')
      metrics.vendorErrors.inc({ vendor: call.vendor, kind: call.kind, error: call.outcome });
    if (call.key) metrics.vendorKeyCalls.inc({ vendor: call.vendor, key: call.key, outcome: call.outcome });
    if (logger.isLevelEnabled('debug')) {
      const ms = (seconds: number | undefined) => (seconds === undefined ? undefined : Math.round(seconds * 1e6) / 1e3);
      logger.debug(
        {
          vendor: call.vendor,
          kind: call.kind,
          model: call.model,
          outcome: call.outcome,
          ms: ms(call.seconds),
          firstTokenMs: ms(call.firstTokenSeconds),
        },
        'vendor call',
      );
    }
  };
}
