import type { Context } from 'koa';
import { ApiError } from '../errors';

/**
 * Bytes of large replies being built at once, process-wide and per account. A page of conversation items or thread
 * messages costs the process a few times its size while it is read and serialised (rows, wire objects, JSON text),
 * so a crowd asking for large pages at once would make it hold all of them. Such a request is admitted for its
 * page's worst case and waits while the budget is spent; its share comes back the moment its reply is handed to
 * the socket. What then waits for a client that does not read is bounded by the HTTP server (src/http/server.ts).
 * A request larger than the whole budget is admitted alone.
 *
 * Fair between accounts (api-decisions 36): one account holds at most `perAccountBytes` of the budget, and waiting
 * requests are admitted by account in turn (each account's own in arrival order), so a crowd of one account's
 * readers leaves room for, and does not queue ahead of, another account's.
 */
export interface ReplyBudget {
  /** Waits for `bytes` of the budget, held until the request's reply is handed over (or the client is gone). */
  admit(ctx: Context, bytes: number): Promise<void>;
  /** Bytes admitted now, and requests waiting (for metrics and tests). */
  readonly inUse: number;
  readonly waiting: number;
}

interface Waiter {
  bytes: number;
  start: () => void;
}

export function createReplyBudget(maxBytes: number, perAccountBytes = maxBytes): ReplyBudget {
  let inUse = 0;
  let waiting = 0;
  const byAccount = new Map<string, number>();
  // Accounts with requests waiting, in the order they are served next (one served goes to the back).
  const queues = new Map<string, Waiter[]>();
  const fits = (used: number, bytes: number, max: number) => used === 0 || used + bytes <= max;
  const pump = () => {
    for (let admitted = true; admitted;) {
      admitted = false;
      for (const [account, queue] of queues) {
        const next = queue[0]!;
        const held = byAccount.get(account) ?? 0;
        if (!fits(inUse, next.bytes, maxBytes) || !fits(held, next.bytes, perAccountBytes)) continue;
        queue.shift();
        waiting--;
        queues.delete(account);
        if (queue.length > 0) queues.set(account, queue);
        inUse += next.bytes;
        byAccount.set(account, held + next.bytes);
        next.start();
        admitted = true;
        break;
      }
    }
  };
  return {
    async admit(ctx, bytes) {
      const account: string = ctx.state?.auth?.accountId ?? '';
      await new Promise<void>((start) => {
        const queue = queues.get(account);
        if (queue) queue.push({ bytes, start });
        else queues.set(account, [{ bytes, start }]);
        waiting++;
        pump();
      });
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        inUse -= bytes;
        const left = byAccount.get(account)! - bytes;
        if (left === 0) byAccount.delete(account);
        else byAccount.set(account, left);
        pump();
      };
      // A client that went away while it waited gets nothing built.
      if (ctx.res.destroyed || ctx.req.socket.destroyed) {
        release();
        throw new ApiError(499, 'request.cancelled', 'The client closed the connection.');
      }
      ctx.res.once('prefinish', release);
      ctx.res.once('close', release);
    },
    get inUse() {
      return inUse;
    },
    get waiting() {
      return waiting;
    },
  };
}
