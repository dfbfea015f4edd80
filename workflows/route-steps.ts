import type { FlowContext } from './flow-context';

/** A route's plan for one job (api-decisions 32): its targets in order, from a draw made once and recorded. */
export interface RoutePlan {
  targets: string[];
  draw: number;
}

/** The route's target a model call goes to, and the one after it (none: it is called with the usual retries). */
export interface RouteTarget {
  model: string;
  next?: string;
}

/**
 * A route's target failed before its first output with a failure another vendor may not have (api-decisions 32):
 * the flow calls the next target. Recorded like any outcome, so a re-run goes on from the next target.
 */
export interface RouteFailover {
  kind: 'failover';
  model: string;
  reason: string;
}

/** The model calls of a job on a route, through its targets (routeCalls). */
export interface RouteCalls<Args, Outcome> {
  call(args: Args): Promise<Outcome>;
  /** The target that served the last call. */
  served?: string;
}

/**
 * The model calls of a job on a route (Responses' turns, Runs' rounds): its plan, drawn once in a recorded step (`plan`,
 * at the first call); each call starts at the target that served the call before and, after a failover outcome
 * (recorded too), calls the next target at once. A re-run replays the plan and the failovers and goes on from the
 * target they reached: never another draw, never a target tried again.
 */
export function routeCalls<Activities, Args, Outcome extends { kind: string }>(
  ctx: FlowContext<Activities>,
  plan: () => Promise<RoutePlan>,
  callTarget: (args: Args, target: RouteTarget) => Promise<Outcome | RouteFailover>,
): RouteCalls<Args, Exclude<Outcome, RouteFailover>> {
  let recorded: RoutePlan | undefined;
  let index = 0;
  const calls: RouteCalls<Args, Exclude<Outcome, RouteFailover>> = {
    async call(args) {
      recorded ??= await ctx.cancellable(plan);
      for (;;) {
        const next = recorded.targets[index + 1];
        const target: RouteTarget = next
          ? { model: recorded.targets[index], next }
          : { model: recorded.targets[index] };
        const outcome = await ctx.cancellable(() => callTarget(args, target));
        if (outcome.kind !== 'failover') {
          calls.served = target.model;
          return outcome as Exclude<Outcome, RouteFailover>;
        }
        index += 1;
      }
    },
  };
  return calls;
}
