import Router from '@koa/router';
import type { Context } from 'koa';
import { listQuerySchema, toListEnvelope } from '../http/lists';
import { parseInput } from '../http/validation';
import { idempotent, idempotentCall } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import { createRunSchema, createThreadAndRunSchema, submitToolOutputsSchema, updateRunSchema } from './runs.schema';
import type { Created, RunsService } from './runs.service';
import { runToWire } from './runs.wire';

export interface RunsRoutesDeps {
  runs: RunsService;
}

/** /v2/threads/{thread_id}/runs and /v2/threads/runs (spec: Legacy endpoints (version 2); api-decisions 6). */
export function runsRoutes(deps: RunsRoutesDeps): Router {
  const { runs } = deps;
  const router = new Router({ prefix: '/v2/threads' });

  router.post('/runs', idempotent('runs'), modelWork({ job: true }), async (ctx) => {
    const body = parseInput(createThreadAndRunSchema, ctx.request.body ?? {}, 'run');
    sendCreated(ctx, await runs.createThreadAndRun(ctx.state.auth.accountId, body, idempotentCall(ctx, body)));
  });

  router.post('/:threadId/runs', idempotent('runs'), modelWork({ job: true }), async (ctx) => {
    const body = parseInput(createRunSchema, ctx.request.body ?? {}, 'run');
    // The thread is part of what the key is bound to: the same body on another thread is another request.
    const call = idempotentCall(ctx, { thread_id: ctx.params.threadId, ...body });
    sendCreated(ctx, await runs.create(ctx.state.auth.accountId, ctx.params.threadId, body, call));
  });

  router.get('/:threadId/runs', async (ctx) => {
    const query = parseInput(listQuerySchema, ctx.query, 'run');
    ctx.body = toListEnvelope(await runs.list(ctx.state.auth.accountId, ctx.params.threadId, query), runToWire);
  });

  router.get('/:threadId/runs/:runId', async (ctx) => {
    ctx.body = runToWire(await runs.get(ctx.state.auth.accountId, ctx.params.threadId, ctx.params.runId));
  });

  router.post('/:threadId/runs/:runId', async (ctx) => {
    const body = parseInput(updateRunSchema, ctx.request.body ?? {}, 'run');
    ctx.body = runToWire(
      await runs.update(ctx.state.auth.accountId, ctx.params.threadId, ctx.params.runId, body.metadata),
    );
  });

  router.post('/:threadId/runs/:runId/cancel', async (ctx) => {
    ctx.body = runToWire(await runs.cancel(ctx.state.auth.accountId, ctx.params.threadId, ctx.params.runId));
  });

  router.post('/:threadId/runs/:runId/submit_tool_outputs', async (ctx) => {
    const body = parseInput(submitToolOutputsSchema, ctx.request.body ?? {}, 'run');
    ctx.body = runToWire(
      await runs.submitToolOutputs(ctx.state.auth.accountId, ctx.params.threadId, ctx.params.runId, body.tool_outputs),
    );
  });

  return router;
}

/** A created Run, or with an Idempotency-Key the Run an earlier request created (`Idempotent-Replayed: true`). */
function sendCreated(ctx: Context, created: Created): void {
  if (created.replayed) ctx.set('Idempotent-Replayed', 'true');
  ctx.body = runToWire(created.run);
}
