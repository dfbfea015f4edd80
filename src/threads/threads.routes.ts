import Router from '@koa/router';
import type { Db } from '../db/database';
import { MAX_PAGE_BYTES } from '../db/keyset-page';
import { listQuerySchema, setListBody } from '../http/lists';
import type { ReplyBudget } from '../http/reply-budget';
import { parseInput } from '../http/validation';
import {
  bulkCreateMessagesSchema,
  bulkDeleteMessagesSchema,
  createMessageSchema,
  createThreadSchema,
  updateMessageSchema,
  updateThreadSchema,
} from './threads.schema';
import type { RunsService } from './runs.service';
import { createThreadsService, messageInputToNew } from './threads.service';
import { messageToWire, threadToWire } from './threads.wire';

/** /v2/threads and their messages (spec: Legacy endpoints (version 2); shapes api-decisions 5). */
export interface ThreadsRoutesDeps {
  db: Db;
  /** Deleting a thread cancels its active Run first. */
  runs: Pick<RunsService, 'cancelActiveRuns'>;
  /** Pages of messages are built within the process-wide budget of large replies. */
  replyBudget: ReplyBudget;
}

export function threadsRoutes(deps: ThreadsRoutesDeps): Router {
  const threads = createThreadsService({ db: deps.db, beforeDeleteThread: deps.runs.cancelActiveRuns });
  const router = new Router({ prefix: '/v2/threads' });

  router.post('/', async (ctx) => {
    const body = parseInput(createThreadSchema, ctx.request.body ?? {}, 'thread');
    const thread = await threads.create(ctx.state.auth.accountId, {
      metadata: body.metadata,
      messages: body.messages?.map(messageInputToNew),
    });
    ctx.body = threadToWire(thread);
  });

  router.get('/:threadId', async (ctx, next) => {
    if (isRunsPath(ctx.params.threadId)) return next();
    ctx.body = threadToWire(await threads.get(ctx.state.auth.accountId, ctx.params.threadId));
  });

  router.post('/:threadId', async (ctx, next) => {
    if (isRunsPath(ctx.params.threadId)) return next();
    const body = parseInput(updateThreadSchema, ctx.request.body ?? {}, 'thread');
    ctx.body = threadToWire(await threads.update(ctx.state.auth.accountId, ctx.params.threadId, body.metadata));
  });

  router.delete('/:threadId', async (ctx, next) => {
    if (isRunsPath(ctx.params.threadId)) return next();
    await threads.remove(ctx.state.auth.accountId, ctx.params.threadId);
    ctx.body = { id: ctx.params.threadId, object: 'thread.deleted', deleted: true };
  });

  router.post('/:threadId/messages', async (ctx) => {
    const body = parseInput(createMessageSchema, ctx.request.body ?? {}, 'message');
    const [message] = await threads.addMessages(ctx.state.auth.accountId, ctx.params.threadId, [
      messageInputToNew(body),
    ]);
    ctx.body = messageToWire(message);
  });

  router.get('/:threadId/messages', async (ctx) => {
    const query = parseInput(listQuerySchema, ctx.query, 'message');
    await deps.replyBudget.admit(ctx, MAX_PAGE_BYTES);
    // Built and serialised in slices (keyset-page.ts READ_SLICE_BYTES, lists.ts SERIALISE_SLICE_BYTES).
    await setListBody(
      ctx,
      await threads.listMessages(ctx.state.auth.accountId, ctx.params.threadId, query),
      messageToWire,
    );
  });

  // Before `/:messageId`: the bulk paths would otherwise read as a message id.
  router.post('/:threadId/messages/bulk-create', async (ctx) => {
    const body = parseInput(bulkCreateMessagesSchema, ctx.request.body ?? {}, 'message');
    const rows = await threads.addMessages(
      ctx.state.auth.accountId,
      ctx.params.threadId,
      body.messages.map(messageInputToNew),
    );
    await setListBody(ctx, { rows, hasMore: false }, messageToWire);
  });

  router.delete('/:threadId/messages/bulk-delete', async (ctx) => {
    const body = parseInput(bulkDeleteMessagesSchema, ctx.request.body ?? {}, 'message');
    await threads.removeMessages(ctx.state.auth.accountId, ctx.params.threadId, body.message_ids);
    ctx.body = { object: 'list', data: body.message_ids.map(messageDeleted) };
  });

  router.get('/:threadId/messages/:messageId', async (ctx) => {
    ctx.body = messageToWire(
      await threads.getMessage(ctx.state.auth.accountId, ctx.params.threadId, ctx.params.messageId),
    );
  });

  router.post('/:threadId/messages/:messageId', async (ctx) => {
    const body = parseInput(updateMessageSchema, ctx.request.body ?? {}, 'message');
    ctx.body = messageToWire(
      await threads.updateMessage(ctx.state.auth.accountId, ctx.params.threadId, ctx.params.messageId, body.metadata),
    );
  });

  router.delete('/:threadId/messages/:messageId', async (ctx) => {
    await threads.removeMessage(ctx.state.auth.accountId, ctx.params.threadId, ctx.params.messageId);
    ctx.body = messageDeleted(ctx.params.messageId);
  });

  return router;
}

const messageDeleted = (id: string) => ({ id, object: 'thread.message.deleted' as const, deleted: true as const });

/**
 * `/v2/threads/runs` (create a thread and run it) belongs to the Runs routes, whichever order the route modules
 * are mounted in: it is passed on (to the next module) rather than read as a thread id.
 */
const isRunsPath = (threadId: string) => threadId === 'runs';
