import Router from '@koa/router';
import type { Db } from '../db/database';
import { MAX_PAGE_BYTES } from '../db/keyset-page';
import type { ReplyBudget } from '../http/reply-budget';
import { listQuerySchema, setListBody, toListEnvelope } from '../http/lists';
import { parseInput } from '../http/validation';
import { conversationToWire, itemToWire } from './conversations.wire';
import { addItemsSchema, createConversationSchema, updateConversationSchema } from './conversations.schema';
import { createConversationsService, inputItemToNew } from './conversations.service';

/** /v2/conversations and their items (spec: Endpoints, Conversations). */
export interface ConversationsRoutesDeps {
  db: Db;
  /** Pages of items are built within the process-wide budget of large replies. */
  replyBudget: ReplyBudget;
}

/** `prefix`: /v2/conversations, or /openai/v1/conversations for the OpenAI-compatible surface (same shapes). */
export function conversationsRoutes(deps: ConversationsRoutesDeps, prefix = '/v2/conversations'): Router {
  const conversations = createConversationsService({ db: deps.db });
  const router = new Router({ prefix });

  router.post('/', async (ctx) => {
    const body = parseInput(createConversationSchema, ctx.request.body ?? {}, 'conversation');
    const conversation = await conversations.create(ctx.state.auth.accountId, {
      metadata: body.metadata,
      items: body.items?.map(inputItemToNew),
    });
    ctx.body = conversationToWire(conversation);
  });

  router.get('/', async (ctx) => {
    const query = parseInput(listQuerySchema, ctx.query, 'conversation');
    ctx.body = toListEnvelope(await conversations.list(ctx.state.auth.accountId, query), conversationToWire);
  });

  router.get('/:conversationId', async (ctx) => {
    ctx.body = conversationToWire(await conversations.get(ctx.state.auth.accountId, ctx.params.conversationId));
  });

  router.post('/:conversationId', async (ctx) => {
    const body = parseInput(updateConversationSchema, ctx.request.body ?? {}, 'conversation');
    ctx.body = conversationToWire(
      await conversations.update(ctx.state.auth.accountId, ctx.params.conversationId, body.metadata),
    );
  });

  router.delete('/:conversationId', async (ctx) => {
    await conversations.remove(ctx.state.auth.accountId, ctx.params.conversationId);
    ctx.body = { id: ctx.params.conversationId, object: 'conversation.deleted', deleted: true };
  });

  router.post('/:conversationId/items', async (ctx) => {
    const body = parseInput(addItemsSchema, ctx.request.body ?? {}, 'conversation');
    const rows = await conversations.addItems(
      ctx.state.auth.accountId,
      ctx.params.conversationId,
      body.items.map(inputItemToNew),
    );
    // api-decisions 3: the created items, in order, in the list envelope.
    await setListBody(ctx, { rows, hasMore: false }, itemToWire);
  });

  router.get('/:conversationId/items', async (ctx) => {
    const query = parseInput(listQuerySchema, ctx.query, 'conversation');
    await deps.replyBudget.admit(ctx, MAX_PAGE_BYTES);
    // Built and serialised in slices (keyset-page.ts READ_SLICE_BYTES, lists.ts SERIALISE_SLICE_BYTES).
    await setListBody(
      ctx,
      await conversations.listItems(ctx.state.auth.accountId, ctx.params.conversationId, query),
      itemToWire,
    );
  });

  router.get('/:conversationId/items/:itemId', async (ctx) => {
    ctx.body = itemToWire(
      await conversations.getItem(ctx.state.auth.accountId, ctx.params.conversationId, ctx.params.itemId),
    );
  });

  router.delete('/:conversationId/items/:itemId', async (ctx) => {
    await conversations.removeItem(ctx.state.auth.accountId, ctx.params.conversationId, ctx.params.itemId);
    ctx.body = { id: ctx.params.itemId, object: 'conversation.item.deleted', deleted: true };
  });

  return router;
}
