import { Migrator, NO_MIGRATIONS, type MigrationResultSet } from 'kysely';
import { migrations } from '../../migrations';
import type { Db } from './database';

function migrator(db: Db) {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

function check({ error, results }: MigrationResultSet): void {
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
}

export async function migrateToLatest(db: Db): Promise<void> {
  check(await migrator(db).migrateToLatest());
}

export async function migrateDownAll(db: Db): Promise<void> {
  check(await migrator(db).migrateTo(NO_MIGRATIONS));
}
