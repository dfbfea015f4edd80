import type { Metrics } from '../metrics/metrics';
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
