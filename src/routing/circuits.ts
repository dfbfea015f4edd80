/**
 * One circuit per vendor (its key: one key per vendor today), for routes (api-decisions 32): after FAILURES_TO_OPEN
 * (ROUTE_CIRCUIT_FAILURES) consecutive failures that would fail a route over, the circuit opens and a route skips that vendor's targets at once
 * (while another target follows) instead of waiting for its timeout; after COOL_DOWN_MS one call is let through, and
 * its success closes the circuit, its failure opens it again (COOL_DOWN_MS: ROUTE_CIRCUIT_COOL_DOWN_MS). In memory, per process: each replica learns on its own.
 */
export const FAILURES_TO_OPEN = 3;
export const COOL_DOWN_MS = 30_000;

export interface Circuits {
  /** Whether calls to the vendor are skipped now. */
  isOpen(vendor: string): boolean;
  success(vendor: string): void;
  failure(vendor: string): void;
  /** Vendors whose circuit is open now (metrics). */
  open(): string[];
}

export function createCircuits(
  options: { failuresToOpen?: number; coolDownMs?: number; now?: () => number } = {},
): Circuits {
  const failuresToOpen = options.failuresToOpen ?? FAILURES_TO_OPEN;
  const coolDownMs = options.coolDownMs ?? COOL_DOWN_MS;
  const now = options.now ?? Date.now;
  const state = new Map<string, { failures: number; openUntil: number }>();
  const isOpen = (vendor: string) => (state.get(vendor)?.openUntil ?? 0) > now();
  return {
    isOpen,
    success: (vendor) => void state.delete(vendor),
    failure(vendor) {
      const current = state.get(vendor) ?? { failures: 0, openUntil: 0 };
      current.failures += 1;
      // A trial call after the cool-down that fails opens it again at once (its count is still past the threshold).
      if (current.failures >= failuresToOpen) current.openUntil = now() + coolDownMs;
      state.set(vendor, current);
    },
    open: () => [...state.keys()].filter(isOpen),
  };
}

const byProviders = new WeakMap<object, Circuits>();

/**
 * The circuits of one provider registry: every caller in a process shares its registry (chat, embeddings, audio,
 * the activities), so keyed by it they share one set of circuits without another dependency to pass around.
 */
export function circuitsOf(providers: object): Circuits {
  let circuits = byProviders.get(providers);
  if (!circuits) byProviders.set(providers, (circuits = createCircuits()));
  return circuits;
}

/**
 * The circuits of a registry with the process's settings (ROUTE_CIRCUIT_FAILURES, ROUTE_CIRCUIT_COOL_DOWN_MS), made
 * when the runtime creates the registry, before any call.
 */
export function configureCircuits(
  providers: object,
  options: { failuresToOpen: number; coolDownMs: number },
): Circuits {
  const circuits = createCircuits(options);
  byProviders.set(providers, circuits);
  return circuits;
}
