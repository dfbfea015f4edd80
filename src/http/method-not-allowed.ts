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
  // Each route with its specificity and its literal start (the path before its first parameter, wildcard or optional
  // part), lower-cased as the routers match (case-insensitively): a request path that does not start with it cannot
  // match, so most routes are passed over without running their pattern.
  const routes = routers
    .flatMap((router) => router.stack)
    .filter((layer) => layer.methods.length > 0)
    .map((layer) => ({
      layer,
      literals: literalSegments(layer.path),
      start: typeof layer.path === 'string' ? layer.path.split(/[:*{(\\]/)[0]!.toLowerCase() : '',
    }));
  return async (ctx, next) => {
    if (ctx.method !== 'OPTIONS') {
      const path = ctx.path;
      const lowered = path.toLowerCase();
      let most = -1;
      let allowed: Set<string> | undefined;
      for (const route of routes) {
        if (route.literals < most || !lowered.startsWith(route.start) || !route.layer.match(path)) continue;
        if (route.literals > most) {
          most = route.literals;
          allowed = new Set();
        }
        for (const method of route.layer.methods) allowed!.add(method);
      }
      if (allowed && !allowed.has(ctx.method)) {
        const allow = [...allowed].join(', ');
        throw new ApiError(
          405,
          'request.method_not_allowed',
          `${ctx.method} is not allowed on ${path}; it takes ${allow}.`,
          {
            headers: { Allow: allow },
          },
        );
      }
    }
    await next();
  };
}
