import Router from '@koa/router';
import { z } from 'zod';
import { sendEventStream } from '../http/sse';
import { listQuerySchema, toListEnvelope } from '../http/lists';
import { parseInput } from '../http/validation';
import type { EventLog } from '../events/event-log';
import type { StreamEvent } from '../events/stream-event';
import { idempotent, idempotentCall } from '../idempotency/idempotency';
import { modelWork } from '../limits/account-limits';
import { refuseUnsendableMcpHeaders } from '../mcp/mcp-headers';
import {
  canonicalResponseBody,
  createResponseSchema,
  getResponseQuerySchema,
  streamsOnlySynchronous,
} from './responses.schema';
import { responseStream } from './response-events';
import { isFinalStatus } from './response-types';
import { inputItemToWire, responseToWire, storedResponseToWire, streamEventToWire } from './responses.wire';
import type { ResponsesService } from './responses.service';
import type { ResponseRow } from './responses.table';

export interface ResponsesRoutesDeps {
  responses: ResponsesService;
  events: EventLog;
}

/** Where the routes are mounted, and what an absent `background` means there. */
export interface ResponsesSurface {
  prefix: string;
  /** The spec's default is a background Response; OpenAI's (on /openai/v1) a synchronous one. */
  defaultBackground: boolean;
  /** Whether a background Response may be streamed from its creation (OpenAI's API: yes; the spec: no). */
  backgroundStreams: boolean;
}

const V2_SURFACE: ResponsesSurface = { prefix: '/v2/responses', defaultBackground: true, backgroundStreams: false };

/** /v2/responses: create (background, synchronous or streamed), get (or resume a stream), cancel, delete, input items. */
export function responsesRoutes(deps: ResponsesRoutesDeps, surface: ResponsesSurface = V2_SURFACE): Router {
  const service = deps.responses;
  const router = new Router({ prefix: surface.prefix });
  // The default goes in before validation (`stream: true` alone is valid where the default is synchronous),
  // inside the schema, so that parseInput still sees the body as read (with the reader's refusals).
  const withDefault = surface.defaultBackground
    ? createResponseSchema
    : z.preprocess(
        (value) => (isObject(value) && value.background === undefined ? { ...value, background: false } : value),
        createResponseSchema,
      );
  const bodySchema = surface.backgroundStreams ? withDefault : withDefault.superRefine(streamsOnlySynchronous);

  // The request log names the Response a request is about.
  router.param('id', (id, ctx, next) => {
    ctx.state.responseId = id;
    return next();
  });

  router.post('/', idempotent('responses'), modelWork({ job: true }), async (ctx) => {
    const body = canonicalResponseBody(parseInput(bodySchema, ctx.request.body, 'response'));
    refuseUnsendableMcpHeaders(body.tools);
    const { accountId } = ctx.state.auth;
    const waits = body.stream === true || body.background === false;
    const { response, replayed, follower } = await service.create(
      accountId,
      body,
      idempotentCall(ctx, body),
      ctx.state.auth.account,
      { subscribe: waits },
    );
    ctx.state.responseId = response.id;
    try {
      if (replayed) ctx.set('Idempotent-Replayed', 'true');
      if (body.stream) {
        // Its first event (response.created, stored with the Response) goes out even past a hand-over: it is how the
        // client learns the id it resumes with.
        await sendEventStream(
          ctx,
          (signal) =>
            withResponseObjects(
              response,
              follower ? follower.events(signal) : deps.events.follow(responseStream(response.id), -1, signal),
            ),
          { firstBeforeHandover: true },
        );
      } else if (body.background === false) {
        // A client that goes away stops our waiting, not the generation (the result stays readable by GET).
        const gone = new AbortController();
        ctx.res.once('close', () => gone.abort());
        ctx.body = storedResponseToWire(await service.waitForFinal(accountId, response.id, gone.signal, follower));
      } else {
        ctx.body = responseToWire(response);
      }
    } finally {
      follower?.close();
    }
  });

  router.get('/:id', async (ctx) => {
    const query = parseInput(getResponseQuerySchema, ctx.query, 'response');
    const response = await service.find(ctx.state.auth.accountId, ctx.params.id);
    if (query.stream === 'true') {
      const after = query.starting_after ?? -1;
      // A finished Response has its whole stream stored (the final event commits with the status), so a
      // replay ends there; following would wait forever when `starting_after` is at or past the final event.
      await sendEventStream(ctx, (signal) =>
        withResponseObjects(
          response,
          isFinalStatus(response.status)
            ? storedEvents(response.id, after)
            : deps.events.follow(responseStream(response.id), after, signal),
        ),
      );
    } else {
      ctx.body = responseToWire(response);
    }
  });

  router.get('/:id/input_items', async (ctx) => {
    const query = parseInput(listQuerySchema, ctx.query, 'response');
    ctx.body = toListEnvelope(
      await service.inputItems(ctx.state.auth.accountId, ctx.params.id, query),
      inputItemToWire,
    );
  });

  router.post('/:id/cancel', async (ctx) => {
    ctx.body = await service.cancel(ctx.state.auth.accountId, ctx.params.id);
  });

  router.delete('/:id', async (ctx) => {
    ctx.body = await service.remove(ctx.state.auth.accountId, ctx.params.id);
  });

  async function* storedEvents(id: string, after: number) {
    yield* await deps.events.read(id, after);
  }

  return router;
}

/**
 * `response.created` and `response.in_progress` are stored as `{id, status}` (the spec's fields); on the wire
 * they carry the whole Response object as it was then (no output or usage yet), which the OpenAI SDK's
 * stream helpers build their snapshot from. The other events get the fields OpenAI's reference requires
 * (streamEventToWire).
 */
async function* withResponseObjects(row: ResponseRow, events: AsyncIterable<StreamEvent>): AsyncIterable<StreamEvent> {
  for await (const event of events) {
    if (event.type === 'response.created' || event.type === 'response.in_progress') {
      const status = (event as { response?: { status?: ResponseRow['status'] } }).response?.status ?? row.status;
      yield {
        ...event,
        response: {
          ...responseToWire(row),
          status,
          output: [],
          usage: null,
          error: null,
          incomplete_details: null,
          completed_at: null,
        },
      };
    } else {
      yield streamEventToWire(event);
    }
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
