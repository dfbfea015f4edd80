import type { Catalog } from '../catalog/catalog.service';

/** What planning a route reads of the catalog. */
export type RouteCatalog = Pick<Catalog, 'getRoute' | 'getModel' | 'modelAvailability'>;

/**
 * The models to try for one request to `code`, in order (api-decisions 32): a `fallback` route's targets as
 * declared; a `weighted` route's target drawn by weight first, then its other targets as declared, as fallbacks.
 * A target that is a route is expanded in place. Targets whose vendor is not configured are left out, and each
 * model comes once. A pure function of the catalog and `draw` (a number in [0, 1)), so a job that recorded its draw
 * plans the same targets on every replay. A model code plans itself.
 */
export function planRoute(catalog: RouteCatalog, code: string, draw: number): string[] {
  return [...new Set(expand(catalog, code, draw))];
}

function expand(catalog: RouteCatalog, code: string, draw: number): string[] {
  const model = catalog.getModel(code);
  if (model) return catalog.modelAvailability(model).available ? [code] : [];
  const route = catalog.getRoute(code);
  if (!route) return [];
  const usable = route.targets
    .map((target) => ({ ...target, plan: expand(catalog, target.model, 0) }))
    .filter((target) => target.plan.length > 0);
  if (route.strategy !== 'weighted') return usable.flatMap((target) => target.plan);
  const weighted = usable.filter((target) => (target.weight ?? 0) > 0);
  const total = weighted.reduce((sum, target) => sum + target.weight!, 0);
  if (total === 0) return usable.flatMap((target) => target.plan);
  // The draw picks a target by its share of the total weight; what is left of it within that share is the draw of a
  // target that is itself a weighted route.
  let point = Math.min(Math.max(draw, 0), 1 - Number.EPSILON) * total;
  let chosen = weighted[weighted.length - 1];
  for (const target of weighted) {
    if (point < target.weight!) {
      chosen = target;
      break;
    }
    point -= target.weight!;
  }
  const inner = Math.min(point / chosen.weight!, 1 - Number.EPSILON);
  return [
    ...expand(catalog, chosen.model, inner),
    ...usable.filter((target) => target !== chosen).flatMap((target) => target.plan),
  ];
}

/**
 * A job's plan for a route, from a fresh draw (a durable job records it: planRoute / planRunRoute steps). With no
 * target available any more (its vendors' settings were removed since), the route itself, whose call fails cleanly.
 */
export function drawRoutePlan(catalog: RouteCatalog, code: string): { targets: string[]; draw: number } {
  const draw = Math.random();
  const targets = planRoute(catalog, code, draw);
  return { targets: targets.length > 0 ? targets : [code], draw };
}
