import Router from '@koa/router';
import { parseInput } from '../http/validation';
import { rotateWebhookSecretSchema } from './webhook-signing.schema';
import type { WebhookSigningService } from './webhook-signing.service';
import { webhookSigningToWire } from './webhook-signing.wire';

export interface WebhookSigningRoutesDeps {
  webhookSigning: WebhookSigningService;
}

/**
 * /v2/organization/webhook-signing: the account turns Standard Webhooks signing of its webhooks and callbacks on,
 * rotates its secret, or turns it off (api-decisions 33). The account's own key calls them (an operator, with the
 * admin token and X-Switchyard-Account). The secret is in the reply that made it and nowhere else: these routes take
 * no Idempotency-Key, so no stored reply ever holds it (a repeated enable is a 400, not a replay of the secret).
 */
export function webhookSigningRoutes(deps: WebhookSigningRoutesDeps): Router {
  const router = new Router({ prefix: '/v2/organization/webhook-signing' });
  const { webhookSigning } = deps;

  router.get('/', async (ctx) => {
    ctx.body = webhookSigningToWire(await webhookSigning.status(ctx.state.auth.accountId));
  });

  router.post('/', async (ctx) => {
    const { state, secret } = await webhookSigning.enable(ctx.state.auth.accountId);
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...webhookSigningToWire(state), secret };
  });

  router.post('/rotate', async (ctx) => {
    const body = parseInput(rotateWebhookSecretSchema, ctx.request.body ?? {}, 'organization');
    const { state, secret } = await webhookSigning.rotate(ctx.state.auth.accountId, {
      keepPreviousSeconds: body.keep_previous_seconds ?? 0,
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { ...webhookSigningToWire(state), secret };
  });

  router.delete('/', async (ctx) => {
    ctx.body = webhookSigningToWire(await webhookSigning.disable(ctx.state.auth.accountId));
  });

  return router;
}
