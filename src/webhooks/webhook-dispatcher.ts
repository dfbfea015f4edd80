import { sql } from 'kysely';
import type { Db } from '../db/database';
import type { Logger } from '../logger';
import type { WebhookDeliverer, WebhookDelivery, WebhookOutcome, WebhookSender } from './webhook-sender';

export interface WebhookDispatcherOptions {
  db: Db;
  logger: Logger;
  deliverer: WebhookDeliverer;
  /** POSTs in flight at once, in all and of one account. */
  concurrency: number;
  perAccountConcurrency: number;
}

/**
 * Webhooks and callbacks, sent outside the jobs that ask for them. A job's `send` claims the delivery (its
 * `webhook_deliveries` row, once per resource) and returns; the POST waits here for a place, at most
 * `perAccountConcurrency` of one account at once, accounts taken in turn, `concurrency` in all. So a receiver that
 * never answers holds one of its own account's places for the timeout, not a job slot (embedded engine) or an
 * activity slot (Temporal worker) that other accounts' generations need.
 *
 * At most once, as before: the row is marked attempted (`attempted_at`, by a conditional update) just before its
 * POST, and only the process whose update took it sends it. A row claimed and never attempted (its process ended
 * while it waited here) is still pending: `sendLeftOver` at start-up sends those.
 */
export interface WebhookDispatcher extends WebhookSender {
  /** Claims the delivery and queues its POST: `queued`, or `skipped` when the resource had its delivery already. */
  send(delivery: WebhookDelivery): Promise<WebhookOutcome>;
  /**
   * Queues the deliveries other processes claimed and never attempted, claimed more than `olderThanMs` ago (0:
   * all, when this process is the only one using the database).
   */
  sendLeftOver(olderThanMs: number): Promise<number>;
  /** Resolves when nothing is queued or being sent (tests; a drain). */
  idle(): Promise<void>;
  /** Sends nothing more (what is queued stays claimed for the next start); waits for the POSTs in flight. */
  stop(): Promise<void>;
}

interface Queued {
  id: string;
  accountId: string;
}

const LEFT_OVER_BATCH = 500;

export function createWebhookDispatcher(options: WebhookDispatcherOptions): WebhookDispatcher {
  const { db, logger, deliverer } = options;
  // Accounts in turn: a Map keeps insertion order, and an account that sent goes to the back.
  const queues = new Map<string, Queued[]>();
  const inFlightByAccount = new Map<string, number>();
  const known = new Set<string>();
  let inFlight = 0;
  let stopped = false;
  let idleWaiters: Array<() => void> = [];

  const busy = () => inFlight > 0 || queues.size > 0;

  function enqueue(item: Queued) {
    if (known.has(item.id)) return;
    known.add(item.id);
    const queue = queues.get(item.accountId);
    if (queue) queue.push(item);
    else queues.set(item.accountId, [item]);
    pump();
  }

  function pump() {
    while (!stopped && inFlight < options.concurrency) {
      let next: Queued | undefined;
      for (const [accountId, queue] of queues) {
        if ((inFlightByAccount.get(accountId) ?? 0) >= options.perAccountConcurrency) continue;
        next = queue.shift();
        queues.delete(accountId);
        if (queue.length > 0) queues.set(accountId, queue);
        break;
      }
      if (!next) break;
      void deliver(next);
    }
    if (!busy()) for (const resolve of idleWaiters.splice(0)) resolve();
  }

  async function deliver(item: Queued) {
    inFlight++;
    inFlightByAccount.set(item.accountId, (inFlightByAccount.get(item.accountId) ?? 0) + 1);
    try {
      // Taken for its one attempt here, or by another process already (then not sent again).
      const row = await db
        .updateTable('webhook_deliveries')
        .set({ attempted_at: sql`now()` })
        .where('id', '=', item.id)
        .where('status', '=', 'pending')
        .where('attempted_at', 'is', null)
        .returning(['id', 'resource_id', 'account_id', 'url', 'payload', 'attempted_at'])
        .executeTakeFirst();
      if (row) {
        await deliverer.post({
          id: row.id,
          resourceId: row.resource_id,
          accountId: row.account_id,
          url: row.url,
          body: JSON.stringify(row.payload),
          attemptedAt: row.attempted_at ?? new Date(),
        });
      }
    } catch (error) {
      logger.error(
        { err: error, deliveryId: item.id, accountId: item.accountId },
        'webhook delivery could not be recorded',
      );
    } finally {
      known.delete(item.id);
      inFlight--;
      const left = (inFlightByAccount.get(item.accountId) ?? 1) - 1;
      if (left > 0) inFlightByAccount.set(item.accountId, left);
      else inFlightByAccount.delete(item.accountId);
      pump();
    }
  }

  return {
    async send(delivery) {
      const claimed = await deliverer.claim(delivery, { attempted: false });
      if (!claimed) return { status: 'skipped' };
      enqueue({ id: claimed.id, accountId: delivery.accountId });
      return { status: 'queued' };
    },
    async sendLeftOver(olderThanMs) {
      const rows = await db
        .selectFrom('webhook_deliveries')
        .select(['id', 'account_id'])
        .where('status', '=', 'pending')
        .where('attempted_at', 'is', null)
        .where(
          'created_at',
          '<=',
          sql<Date>`now() - ${sql.lit(Math.max(0, Math.floor(olderThanMs)))} * interval '1 millisecond'`,
        )
        .orderBy('created_at')
        .limit(LEFT_OVER_BATCH)
        .execute();
      for (const row of rows) enqueue({ id: row.id, accountId: row.account_id });
      if (rows.length > 0)
        logger.info({ deliveries: rows.length }, 'sending webhooks claimed by an earlier process and never attempted');
      return rows.length;
    },
    idle() {
      if (!busy()) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    async stop() {
      stopped = true;
      queues.clear();
      if (inFlight === 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => idleWaiters.push(resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, deliverer.timeoutMs + 1000))),
      ]);
      clearTimeout(timer);
      idleWaiters = [];
    },
  };
}
