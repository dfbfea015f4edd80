import type { Kysely } from 'kysely';

/**
 * Where a route comes from (issue 36, api-decisions 34): `catalog` (the catalog file, replaced by each start's sync)
 * or `admin` (created by an operator through the admin API, kept across starts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('catalog_routes')
    .addColumn('origin', 'text', (c) => c.notNull().defaultTo('catalog'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('catalog_routes').dropColumn('origin').execute();
}
