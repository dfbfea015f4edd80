import { Migrator, NO_MIGRATIONS, sql, type MigrationResultSet } from 'kysely';
import { migrations } from '../../migrations';
import type { Db } from './database';

/**
 * Kysely's bookkeeping tables live in the schema being migrated. Without naming it, kysely searches every
 * schema and may take another schema's migration table (another test run, another service) for ours.
 */
async function migrator(db: Db) {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: rows[0].schema,
  });
}

function check({ error, results }: MigrationResultSet): void {
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new Error(
      `Migration ${failed?.migrationName ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
}

export async function migrateToLatest(db: Db): Promise<void> {
  check(await (await migrator(db)).migrateToLatest());
}

export async function migrateDownAll(db: Db): Promise<void> {
  check(await (await migrator(db)).migrateTo(NO_MIGRATIONS));
}
