import type { Context } from 'koa';
import { ApiError } from '../errors';

/**
 * Bytes of large replies being built at once, process-wide. A page of conversation items or thread messages costs
 * the process a few times its size while it is read and serialised (rows, wire objects, JSON text), so a crowd
 * asking for large pages at once would make it hold all of them. Such a request is admitted for its page's worst
 * case and waits, in arrival order, while the budget is spent; its share comes back the moment its reply is handed
 * to the socket. What then waits for a client that does not read is bounded by the HTTP server (src/http/server.ts).
 * A request larger than the whole budget is admitted alone.
 */
export interface ReplyBudget {
  /** Waits for `bytes` of the budget, held until the request's reply is handed over (or the client is gone). */
  admit(ctx: Context, bytes: number): Promise<void>;
  /** Bytes admitted now, and requests waiting (for metrics and tests). */
  readonly inUse: number;
  readonly waiting: number;
}

export function createReplyBudget(maxBytes: number): ReplyBudget {
  let inUse = 0;
  const queue: Array<{ bytes: number; start: () => void }> = [];
  const pump = () => {
    while (queue.length > 0 && (inUse === 0 || inUse + queue[0]!.bytes <= maxBytes)) {
      const next = queue.shift()!;
      inUse += next.bytes;
      next.start();
    }
  };
  return {
    async admit(ctx, bytes) {
      await new Promise<void>((start) => {
        queue.push({ bytes, start });
        pump();
      });
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        inUse -= bytes;
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
      return queue.length;
    },
  };
}
