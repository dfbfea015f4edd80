import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { ApiError } from '../errors';

/** The literal segments of a route's path: the more it has, the more specifically it names a path. */
const literalSegments = (path: string | RegExp) =>
  typeof path !== 'string' ? 0 : path.split('/').filter((segment) => segment !== '' && !segment.startsWith(':')).length;

/**
 * 405 with `Allow` for a wrong method on any known path, in the spec's envelope (the error middleware gives
 * OpenAI's under /openai/). A path is answered by its most specific routes, those with the most literal segments:
 * `POST /v2/threads/{id}/messages/bulk-delete` is the bulk delete's path (DELETE), not a message whose id is
 * "bulk-delete" (whose POST would have been a confusing 400). The routers' own allowedMethods only see a path no
 * route matches at all.
 */
export function methodNotAllowed(routers: readonly Router[]): Middleware {
  const routes = routers.flatMap((router) => router.stack).filter((layer) => layer.methods.length > 0);
  return async (ctx, next) => {
    if (ctx.method !== 'OPTIONS') {
      const matching = routes.filter((layer) => layer.match(ctx.path));
      if (matching.length > 0) {
        const most = Math.max(...matching.map((layer) => literalSegments(layer.path)));
        const allowed = new Set(
          matching.filter((layer) => literalSegments(layer.path) === most).flatMap((layer) => layer.methods),
        );
        if (!allowed.has(ctx.method)) {
          const allow = [...allowed].join(', ');
          throw new ApiError(
            405,
            'request.method_not_allowed',
            `${ctx.method} is not allowed on ${ctx.path}; it takes ${allow}.`,
            { headers: { Allow: allow } },
          );
        }
      }
    }
    await next();
  };
}
