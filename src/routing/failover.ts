import type { Metrics } from '../metrics/metrics';
import type { RouteFailover } from '../../workflows/route-steps';
import type { Circuits } from './circuits';
import { ProviderError } from '../providers/provider';

/**
 * Why a failed call to one target of a route moves on to the next (api-decisions 32), or undefined when it must not:
 * the failures the adapters retry (ProviderError.isRetryable: connection refused or reset, timeouts, 408, 409, 429,
 * 5xx, an overloaded vendor) are the vendor's, and another vendor may answer; a refusal of the request itself (400,
 * too long, a content filter's finish) would be the same anywhere, and a cancel is the client's.
 */
export function failoverReason(error: unknown): string | undefined {
  if (!ProviderError.isInstance(error) || !error.isRetryable) return undefined;
  return error.kind;
}

/** One move from a failed target to the next: counted by route, reason and the two models. */
export function countFailover(
  metrics: Pick<Metrics, 'routeFailovers'> | undefined,
  failover: { route: string; from: string; to: string; reason: string },
): void {
  metrics?.routeFailovers.inc(failover);
}

/** The target that served a request to a route (the share of traffic per target). */
export function countServed(metrics: Pick<Metrics, 'routeServed'> | undefined, route: string, model: string): void {
  metrics?.routeServed.inc({ route, model });
}

/**
 * One call of a job's recorded step to a route's target (a Run's callModel, a transcription's transcribeAudio), with
 * the target after it, if any: what moves the step on to that one. Each answer is counted, and the flow records it.
 */
export function targetFailovers(
  deps: { metrics?: Pick<Metrics, 'routeFailovers'>; circuits: Circuits },
  call: { route: string; model: { code: string; vendor: string }; next?: string },
) {
  const { route, model, next } = call;
  const failover = (reason: string): RouteFailover => {
    countFailover(deps.metrics, { route, from: model.code, to: next!, reason });
    return { kind: 'failover', model: model.code, reason };
  };
  return {
    /** Before calling: the vendor's circuit is open and another target follows, so it is skipped at once. */
    skipped: (): RouteFailover | undefined =>
      next && deps.circuits.isOpen(model.vendor) ? failover('circuit_open') : undefined,
    /** After a failure before any answer: the circuit counts a vendor's failure, and another target follows. */
    failed(error: unknown): RouteFailover | undefined {
      const reason = failoverReason(error);
      if (reason) deps.circuits.failure(model.vendor);
      return reason && next ? failover(reason) : undefined;
    },
  };
}
