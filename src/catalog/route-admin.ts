import { sql } from 'kysely';
import type { Db } from '../db/database';
import { ApiError, invalidRequest, notFound } from '../errors';
import type { EventBus } from '../events/event-bus';
import type { Logger } from '../logger';
import type { AdminRoute, CatalogRoute } from './catalog-types';
import { routeIssues, toCatalogRoute } from './catalog.loader';
import { ADMIN_ROUTE_POSITIONS, SYNC_LOCK, readRouteRows } from './catalog.repository';
import type { CatalogFileRoute } from './catalog.schema';
import type { Catalog } from './catalog.service';
import type { CatalogRouteRow } from './catalog.table';

/** The bus topic announcing that the routes changed: every process reads them again. */
export const ROUTES_CHANGED = 'catalog.routes';

/** Postgres: how often a process reads the routes again anyway, so a lost announcement only delays a change. */
export const ROUTES_POLL_MS = 15_000;

/**
 * Routes changed at run time (issue 36, api-decisions 34). An operator creates, replaces and deletes routes of their
 * own through the admin API; the catalog file's routes change in the file. A change is validated exactly as the
 * loader validates the file (routeIssues, against the catalog's models and every other route), written under the
 * catalog's sync lock, served by this process before the reply, and announced on the bus: every other process
 * (API replicas and Temporal workers) reads the routes again at once, and every ROUTES_POLL_MS in any case.
 */
export interface RouteAdmin {
  list(): Promise<AdminRoute[]>;
  get(code: string): Promise<AdminRoute>;
  /** 409 `admin.conflict` when a route of that code exists; 400 naming the problem when it does not validate. */
  create(route: CatalogFileRoute): Promise<AdminRoute>;
  /** 404 for an unknown code, 409 for a route of the catalog file. */
  replace(route: CatalogFileRoute): Promise<AdminRoute>;
  /** 400 when another route names it as a target. */
  remove(code: string): Promise<void>;
  /** Reads the routes from the database and serves them (start, announcements, the poll). */
  reload(): Promise<void>;
  /** Stops the poll and the subscription. */
  close(): void;
}

export function createRouteAdmin(deps: {
  db: Db;
  catalog: Catalog;
  bus: EventBus;
  logger: Logger;
  /** Postgres: other processes may change the routes; PGlite is one process. */
  poll: boolean;
}): RouteAdmin {
  const { db, catalog, bus, logger } = deps;
  const models = () => catalog.listModels().filter((model) => !model.route);
  /** Codes of operators' routes this process refused to serve, so each is logged once. */
  const refused = new Set<string>();

  /**
   * The routes to serve: every file route (the loader checked them), then each operator's route that validates
   * with those accepted before it. One that does not (the file changed under it) is left out and logged.
   */
  function servable(rows: CatalogRouteRow[]): CatalogRoute[] {
    const accepted: CatalogRoute[] = rows.filter((row) => row.origin === 'catalog').map(toRoute);
    for (const row of rows.filter((row) => row.origin === 'admin')) {
      const issues = routeIssues({ models: models(), routes: [...accepted, toRoute(row)] });
      if (issues.length === 0) {
        accepted.push(toRoute(row));
        refused.delete(row.code);
      } else if (!refused.has(row.code)) {
        refused.add(row.code);
        logger.error(
          { route: row.code, problems: issues.map((issue) => issue.message) },
          'route created through the admin API is not served: it no longer fits the catalog (change or delete it)',
        );
      }
    }
    return accepted;
  }

  // Reloads run one after another, each reading afresh: the last one to finish serves the newest routes.
  let reloading: Promise<void> = Promise.resolve();
  function reload(): Promise<void> {
    reloading = reloading
      .catch(() => undefined)
      .then(async () => catalog.replaceRoutes(servable(await readRouteRows(db))));
    return reloading;
  }

  const toAdmin = (row: CatalogRouteRow): AdminRoute => ({
    ...toRoute(row),
    origin: row.origin,
    served: catalog.getRoute(row.code) !== undefined,
  });

  async function find(code: string): Promise<AdminRoute> {
    const row = (await readRouteRows(db)).find((candidate) => candidate.code === code);
    if (!row) throw notFound('admin', `No route with code "${code}". GET /admin/routes lists the routes.`);
    return toAdmin(row);
  }

  /**
   * One change under the sync lock: `change` answers the routes after it from the rows before it; the change is
   * refused with the problems it adds (a problem already there, an operator's route the file broke, is not its own).
   */
  async function write(
    describe: string,
    change: (rows: CatalogRouteRow[]) => { routes: CatalogRoute[]; upsert?: CatalogRoute; remove?: string },
  ): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${SYNC_LOCK})`.execute(trx);
      const rows = await trx.selectFrom('catalog_routes').selectAll().orderBy('position').execute();
      const { routes, upsert, remove } = change(rows);
      const before = new Set(
        routeIssues({ models: models(), routes: rows.map(toRoute) }).map((issue) => issue.message),
      );
      const added = routeIssues({ models: models(), routes }).filter((issue) => !before.has(issue.message));
      if (added.length > 0) {
        throw invalidRequest('admin', `${describe}: ${added.map((issue) => issue.message).join('; ')}.`);
      }
      if (remove) await trx.deleteFrom('catalog_routes').where('code', '=', remove).execute();
      if (upsert) {
        const position = rows.find((row) => row.code === upsert.code)?.position ?? nextPosition(rows);
        await trx
          .insertInto('catalog_routes')
          .values({
            code: upsert.code,
            name: upsert.name,
            type: upsert.type,
            strategy: upsert.strategy,
            targets: JSON.stringify(upsert.targets),
            position,
            origin: 'admin',
          })
          .onConflict((conflict) =>
            conflict.column('code').doUpdateSet((eb) => ({
              name: eb.ref('excluded.name'),
              type: eb.ref('excluded.type'),
              strategy: eb.ref('excluded.strategy'),
              targets: eb.ref('excluded.targets'),
            })),
          )
          .execute();
      }
    });
    // Served here before the reply; every other process on the announcement.
    await reload();
    await bus.publish({ topic: ROUTES_CHANGED, id: 'routes' });
  }

  /** The route of `code` an operator may change: 404 when there is none, 409 when it is the file's. */
  function ownRoute(rows: CatalogRouteRow[], code: string): CatalogRouteRow {
    const row = rows.find((candidate) => candidate.code === code);
    if (!row) throw notFound('admin', `No route with code "${code}". GET /admin/routes lists the routes.`);
    if (row.origin === 'catalog') {
      throw new ApiError(
        409,
        'admin.conflict',
        `Route "${code}" is defined in the catalog file (${catalog.path}); change it there. The admin API changes the routes it created.`,
      );
    }
    return row;
  }

  const unsubscribe = bus.subscribeAll(ROUTES_CHANGED, () => {
    reload().catch((error) => logger.warn({ err: error }, 'reading the routes again failed'));
  });
  const poll = deps.poll
    ? setInterval(
        () => void reload().catch((error) => logger.warn({ err: error }, 'reading the routes again failed')),
        ROUTES_POLL_MS,
      )
    : undefined;
  poll?.unref();

  return {
    list: async () => (await readRouteRows(db)).map(toAdmin),
    get: find,
    async create(input) {
      const route = toCatalogRoute(input);
      await write(`Route "${route.code}" cannot be created`, (rows) => {
        if (rows.some((row) => row.code === route.code)) {
          throw new ApiError(
            409,
            'admin.conflict',
            `A route with code "${route.code}" exists; PUT /admin/routes/${route.code} replaces it.`,
          );
        }
        return { routes: [...rows.map(toRoute), route], upsert: route };
      });
      return find(route.code);
    },
    async replace(input) {
      const route = toCatalogRoute(input);
      await write(`Route "${route.code}" cannot be changed so`, (rows) => {
        ownRoute(rows, route.code);
        return { routes: rows.map((row) => (row.code === route.code ? route : toRoute(row))), upsert: route };
      });
      return find(route.code);
    },
    async remove(code) {
      await write(`Route "${code}" cannot be deleted`, (rows) => {
        ownRoute(rows, code);
        return { routes: rows.filter((row) => row.code !== code).map(toRoute), remove: code };
      });
    },
    reload,
    close() {
      unsubscribe();
      if (poll) clearInterval(poll);
    },
  };
}

function toRoute(row: CatalogRouteRow): CatalogRoute {
  return {
    code: row.code,
    name: row.name,
    type: row.type,
    strategy: row.strategy,
    targets: row.targets.map((target) => ({ ...target })),
  };
}

function nextPosition(rows: CatalogRouteRow[]): number {
  return Math.max(ADMIN_ROUTE_POSITIONS - 1, ...rows.map((row) => row.position)) + 1;
}
