import type { Metrics } from '../metrics/metrics';
import { performance } from 'node:perf_hooks';
import type { Db } from '../db/database';
import { newId } from '../ids';
import type { Logger } from '../logger';
import {
  checkOutboundUrl,
  createGuardedFetch,
  OutboundAddressRefusedError,
  type ResolvedAddress,
} from '../outbound/address-guard';
import { signatureHeaders } from './webhook-signing';
import type { WebhookSigningService } from './webhook-signing.service';
import type { WebhookDeliveryStatus } from './webhooks.table';

/**
 * One-shot webhook and callback POSTs (spec "Webhook", DECISIONS 22): one attempt, 10 s timeout,
 * never retried, the outcome recorded in `webhook_deliveries` for operators. Unsigned, as the spec has them,
 * unless the account turned on Standard Webhooks signing (api-decisions 33; webhook-signing.ts).
 *
 * At most once: the `pending` row is claimed (unique resource_id) before the POST. A workflow or
 * activity retry, or a job re-run after a crash, finds the row and sends nothing. A crash between the
 * claim and the POST therefore loses the webhook rather than sending it twice; that is the trade the
 * spec's "not retried" asks for.
 */
export const WEBHOOK_USER_AGENT = 'Switchyard-Webhook/1.0';
const MAX_ERROR_LENGTH = 500;

export interface WebhookSenderOptions {
  metrics?: Metrics;
  db: Db;
  allowPrivateNetworks: boolean;
  logger: Logger;
  timeoutMs?: number;
  /** Name resolution for the connect-time guard; default dns.lookup. Tests use it to simulate rebinding. */
  resolveHost?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** The accounts' signing secrets; without it every delivery is unsigned. */
  signing?: Pick<WebhookSigningService, 'secretsFor'>;
}

export interface WebhookDelivery {
  /** The resource the webhook is about (`resp_…`, a transcription request id): one delivery per resource. */
  resourceId: string;
  accountId: string;
  url: string;
  payload: Record<string, unknown>;
}

export interface WebhookOutcome {
  /** `queued`: claimed, to be sent by the dispatcher (webhook-dispatcher.ts). */
  status: Exclude<WebhookDeliveryStatus, 'pending'> | 'skipped' | 'queued';
  responseStatus?: number;
  error?: string;
}

type AttemptOutcome = WebhookOutcome & { status: Exclude<WebhookDeliveryStatus, 'pending'> };

export interface WebhookSender {
  /** Never throws for a failed delivery (that is recorded and returned); throws only on database errors. */
  send(delivery: WebhookDelivery): Promise<WebhookOutcome>;
}

/** A claimed delivery about to be sent: its row, and what goes into the POST. */
export interface ClaimedDelivery {
  id: string;
  resourceId: string;
  accountId: string;
  url: string;
  /** The payload as JSON text. */
  body: string;
  attemptedAt: Date;
}

/**
 * The steps of a delivery: `claim` writes the row (one per resource: a second claim finds it and answers
 * undefined), `post` sends the one attempt and records its outcome. `send` does both at once; the dispatcher
 * (webhook-dispatcher.ts) claims at once and posts later, outside the job that asked.
 */
export interface WebhookDeliverer extends WebhookSender {
  /** The row, written `pending`; `attempted` marks it taken for its one attempt at once (else the dispatcher takes it). */
  claim(delivery: WebhookDelivery, options: { attempted: boolean }): Promise<{ id: string } | undefined>;
  post(claimed: ClaimedDelivery): Promise<WebhookOutcome>;
  readonly timeoutMs: number;
}

export function createWebhookSender(options: WebhookSenderOptions): WebhookDeliverer {
  const { db, allowPrivateNetworks, logger, resolveHost } = options;
  const timeoutMs = options.timeoutMs ?? 10_000;

  async function claim(delivery: WebhookDelivery, claimOptions: { attempted: boolean }) {
    const claimed = await db
      .insertInto('webhook_deliveries')
      .values({
        id: newId('wh'),
        resource_id: delivery.resourceId,
        account_id: delivery.accountId,
        url: delivery.url,
        payload: JSON.stringify(delivery.payload),
        status: 'pending',
        attempted_at: claimOptions.attempted ? new Date() : null,
      })
      .onConflict((conflict) => conflict.column('resource_id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!claimed) logger.info(logFieldsOf(delivery), 'webhook already attempted for this resource; not sent again');
    return claimed;
  }

  async function send(delivery: WebhookDelivery): Promise<WebhookOutcome> {
    const claimed = await claim(delivery, { attempted: true });
    if (!claimed) return { status: 'skipped' };
    return post({
      id: claimed.id,
      resourceId: delivery.resourceId,
      accountId: delivery.accountId,
      url: delivery.url,
      body: JSON.stringify(delivery.payload),
      attemptedAt: new Date(),
    });
  }

  async function post(claimed: ClaimedDelivery): Promise<WebhookOutcome> {
    const logFields = logFieldsOf(claimed);
    const attemptedAt = claimed.attemptedAt;
    const started = performance.now();
    const outcome = await signed(claimed).then(
      (headers) => attempt(claimed.url, claimed.body, headers),
      (error: unknown): AttemptOutcome => {
        // Signing is on and its secret cannot be opened here: not sent unsigned (a receiver that checks would
        // refuse it; one that does not would be taught to accept unsigned requests). Recorded, with the reason.
        if ((error as Error)?.name === 'SecretUnreadableError') return { status: 'failed', error: messageOf(error) };
        throw error;
      },
    );
    const durationMs = Math.round(performance.now() - started);
    await db
      .updateTable('webhook_deliveries')
      .set({
        status: outcome.status,
        response_status: outcome.responseStatus ?? null,
        error: outcome.error ?? null,
        duration_ms: durationMs,
        attempted_at: attemptedAt,
      })
      .where('id', '=', claimed.id)
      .execute();
    const line = {
      ...logFields,
      status: outcome.status,
      responseStatus: outcome.responseStatus,
      durationMs,
      error: outcome.error,
    };
    options.metrics?.webhookDeliveries.inc({ outcome: outcome.status });
    if (outcome.status === 'delivered') logger.info(line, 'webhook delivered');
    else logger.warn(line, `webhook ${outcome.status}`);
    return outcome;
  }

  /**
   * Standard Webhooks headers when the account signs its webhooks, else none. `webhook-id` is the delivery's row id:
   * one per resource, the same for every attempt of it (a left-over delivery sent by another process included), so
   * a receiver can drop a duplicate by it. The timestamp is the attempt's.
   */
  async function signed(claimed: ClaimedDelivery): Promise<Record<string, string>> {
    const secrets = await options.signing?.secretsFor(claimed.accountId);
    if (!secrets) return {};
    return signatureHeaders(secrets, {
      id: claimed.id,
      timestampSeconds: Math.floor(Date.now() / 1000),
      body: claimed.body,
    });
  }

  async function attempt(rawUrl: string, body: string, signature: Record<string, string>): Promise<AttemptOutcome> {
    // The URL was validated when the resource was created, but configuration may have changed since.
    const checked = checkOutboundUrl(rawUrl, { allowPrivateNetworks, field: 'the webhook URL' });
    if (!checked.ok) return { status: 'refused', error: checked.message };
    const url = checked.url;

    const guardedFetch = createGuardedFetch({ allowPrivateNetworks, resolveHost, connectTimeoutMs: timeoutMs });
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      const response = await guardedFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': WEBHOOK_USER_AGENT, ...signature },
        body,
        signal: controller.signal,
      });
      // The receiver's body means nothing to a one-shot notification.
      await response.body?.cancel().catch(() => undefined);
      const ok = response.status >= 200 && response.status < 300;
      return ok
        ? { status: 'delivered', responseStatus: response.status }
        : { status: 'failed', responseStatus: response.status, error: `the receiver answered HTTP ${response.status}` };
    } catch (error) {
      const refusal = OutboundAddressRefusedError.find(error);
      if (refusal) return { status: 'refused', error: refusal.message };
      if (timedOut) return { status: 'failed', error: `timed out after ${timeoutMs} ms` };
      return { status: 'failed', error: describeNetworkError(error, url) };
    } finally {
      clearTimeout(timer);
      await guardedFetch.close().catch(() => undefined);
    }
  }

  return { send, claim, post, timeoutMs };
}

const logFieldsOf = (delivery: { resourceId: string; accountId: string; url: string }) => ({
  resourceId: delivery.resourceId,
  accountId: delivery.accountId,
  target: safeTarget(delivery.url),
});

/** Scheme, host and port only: a webhook URL's path or query often carries the receiver's secret token. */
function safeTarget(raw: string): string {
  try {
    return new URL(raw).origin;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * The innermost cause is the useful one (fetch reports every network error as "fetch failed").
 * The full URL is replaced by its origin in case an error message quotes it.
 */
function describeNetworkError(error: unknown, url: URL): string {
  let current = error;
  while (hasMessage(current) && hasMessage((current as { cause?: unknown }).cause)) {
    current = (current as { cause?: unknown }).cause;
  }
  const message = hasMessage(current) ? String(current.message) : String(current);
  const text = message.split(url.href).join(url.origin) || 'network error';
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

function messageOf(error: unknown): string {
  const text = hasMessage(error) ? String(error.message) : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

function hasMessage(value: unknown): value is { message: unknown } {
  return typeof value === 'object' && value !== null && 'message' in value;
}
