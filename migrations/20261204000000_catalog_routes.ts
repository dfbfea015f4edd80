import { sql, type Kysely } from 'kysely';

/**
 * Routes of the catalog (issue 36, api-decisions 32), mirrored like its vendors, models and prices: one row per
 * route, its targets in order (`[{model, weight?}]`). Targets are not foreign keys: a target may be another route.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('catalog_routes')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('strategy', 'text', (c) => c.notNull())
    .addColumn('targets', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('position', 'integer', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('catalog_routes').execute();
}
