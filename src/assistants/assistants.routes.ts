import Router from '@koa/router';
import { invalidRequest, notFound } from '../errors';
import { parseInput } from '../http/validation';
import type { Catalog } from '../catalog/catalog.service';
import type { Db } from '../db/database';
import { assistantToListEntry, assistantToWire } from './assistants.wire';
import { MAX_ASSISTANT_ID, assistantBodySchema, listAssistantsQuerySchema } from './assistants.schema';
import { createAssistantsService } from './assistants.service';

export interface AssistantsRoutesDeps {
  db: Db;
  catalog: Catalog;
}

/** /v2/assistants (spec: Endpoints, Assistants; api-decisions 2 and 4). */
export function assistantsRoutes(deps: AssistantsRoutesDeps): Router {
  const assistants = createAssistantsService({ db: deps.db, catalog: deps.catalog });
  const router = new Router({ prefix: '/v2/assistants' });

  router.post('/', async (ctx) => {
    const body = parseInput(assistantBodySchema, ctx.request.body ?? {}, 'assistant');
    ctx.body = assistantToWire(await assistants.create(ctx.state.auth.accountId, body));
  });

  router.get('/', async (ctx) => {
    const query = parseInput(listAssistantsQuerySchema, ctx.query, 'assistant');
    // A bare array, as the real service (api-decisions 2).
    ctx.body = (await assistants.list(ctx.state.auth.accountId, query)).map(assistantToListEntry);
  });

  router.get('/:assistantId', async (ctx) => {
    ctx.body = assistantToWire(await assistants.get(ctx.state.auth.accountId, assistantId(ctx.params.assistantId)));
  });

  router.post('/:assistantId', async (ctx) => {
    const id = assistantId(ctx.params.assistantId);
    const body = parseInput(assistantBodySchema, ctx.request.body ?? {}, 'assistant');
    ctx.body = assistantToWire(await assistants.replace(ctx.state.auth.accountId, id, body));
  });

  router.delete('/:assistantId', async (ctx) => {
    const id = assistantId(ctx.params.assistantId);
    await assistants.remove(ctx.state.auth.accountId, id);
    ctx.body = { id, deleted: true };
  });

  return router;
}

/** A path id that is not an integer is a bad request; an integer beyond the column's range cannot exist. */
function assistantId(raw: string): number {
  if (!/^\d+$/.test(raw))
    throw invalidRequest('assistant', `The assistant id must be a positive integer, got '${raw.slice(0, 64)}'.`);
  const id = Number(raw);
  if (id < 1 || id > MAX_ASSISTANT_ID) throw notFound('assistant', `No assistant with id ${raw}.`);
  return id;
}
