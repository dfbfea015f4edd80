import type { CatalogModel } from '../catalog/catalog-types';
import type { Metrics } from '../metrics/metrics';
import { circuitsOf } from './circuits';
import { countFailover, countServed, failoverReason } from './failover';
import { planRoute, type RouteCatalog } from './route-plan';

export interface FailoverDeps {
  catalog: RouteCatalog;
  /** The process's provider registry: the key of its vendors' circuits (circuits.ts). */
  providers: object;
  metrics?: Pick<Metrics, 'routeFailovers' | 'routeServed'>;
}

/** How one target is called: its model, and the retries to give it (0 when another target follows). */
export interface TargetCall {
  target: CatalogModel;
  maxRetries?: number;
}

/**
 * A call to the model a request names, for callers whose call is not a durable job (chat completions, embeddings,
 * speech, synchronous transcription; api-decisions 32). A model's is one call, with the adapter's retries. A
 * route's tries its targets in the order planRoute gives for a fresh draw, moving on at once (no retries, no
 * backoff: the next vendor is the retry) when `attempt` fails with a failure that is not the request's fault; the
 * last target gets the usual retries. `attempt` must resolve only once the target has answered (for a stream, its
 * first part), so that nothing after that is failed over. Answers the result and the model that served it.
 */
export async function callWithFailover<T>(
  model: CatalogModel,
  deps: FailoverDeps,
  attempt: (call: TargetCall) => Promise<T>,
  draw: () => number = Math.random,
): Promise<{ result: T; served: CatalogModel }> {
  if (!model.route) return { result: await attempt({ target: model }), served: model };
  const route = model.code;
  const targets = planTargets(model, deps, draw());
  const circuits = circuitsOf(deps.providers);
  for (let index = 0; ; index += 1) {
    const target = targets[index];
    const next = targets[index + 1];
    if (next && circuits.isOpen(target.vendor)) {
      countFailover(deps.metrics, { route, from: target.code, to: next.code, reason: 'circuit_open' });
      continue;
    }
    try {
      const result = await attempt(next ? { target, maxRetries: 0 } : { target });
      circuits.success(target.vendor);
      countServed(deps.metrics, route, target.code);
      return { result, served: target };
    } catch (error) {
      const reason = failoverReason(error);
      if (reason) circuits.failure(target.vendor);
      if (!next || !reason) throw error;
      countFailover(deps.metrics, { route, from: target.code, to: next.code, reason });
    }
  }
}

/** The models to try for a request to a route, for one draw. */
export function planTargets(route: CatalogModel, deps: FailoverDeps, draw: number): CatalogModel[] {
  return planRoute(deps.catalog, route.code, draw).map((code) => deps.catalog.getModel(code)!);
}
