import {
  DEFAULT_MIGRATION_LOCK_TABLE,
  DEFAULT_MIGRATION_TABLE,
  Migrator,
  NO_MIGRATIONS,
  sql,
  type ColumnMetadata,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type MigrationResultSet,
  type TableMetadata,
} from 'kysely';
import { migrations } from '../../migrations';
import type { Db } from './database';

/**
 * Kysely's bookkeeping tables live in the schema being migrated. Without naming it, kysely searches every
 * schema and may take another schema's migration table (another test run, another service) for ours.
 *
 * Kysely's migrator also asks its database's introspector for the tables of every schema (whether its own two
 * exist), and Postgres fails that read, `schema "…" does not exist`, when someone else drops a schema while it runs:
 * where schemas come and go beside ours (test runs in parallel, another service's deploys), a start failed for it.
 * So the migrator sees the database through one whose introspector reads only the schema being migrated.
 */
async function migrator(db: Db) {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const schema = rows[0].schema;
  const introspection = schemaIntrospector(db, schema);
  const scoped = new Proxy(db, {
    get(target, property) {
      if (property === 'introspection') return introspection;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return new Migrator({
    db: scoped,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  });
}

/** Tables and views of one schema, with their columns (information_schema: it looks relations up by oid, not name). */
function schemaIntrospector(db: Db, schema: string): DatabaseIntrospector {
  async function getTables(options?: DatabaseMetadataOptions): Promise<TableMetadata[]> {
    const { rows } = await sql<{
      table: string;
      is_view: boolean;
      column: string | null;
      type: string | null;
      nullable: boolean | null;
      default: string | null;
    }>`
      select t.table_name as table, t.table_type = 'VIEW' as is_view, c.column_name as column, c.udt_name as type,
        c.is_nullable = 'YES' as nullable, c.column_default as default
      from information_schema.tables as t
      left join information_schema.columns as c on c.table_schema = t.table_schema and c.table_name = t.table_name
      where t.table_schema = ${schema}
      order by t.table_name, c.ordinal_position`.execute(db);
    const tables = new Map<string, TableMetadata & { columns: ColumnMetadata[] }>();
    for (const row of rows) {
      const kysely = row.table === DEFAULT_MIGRATION_TABLE || row.table === DEFAULT_MIGRATION_LOCK_TABLE;
      if (kysely && !options?.withInternalKyselyTables) continue;
      let table = tables.get(row.table);
      if (!table) tables.set(row.table, (table = { name: row.table, schema, isView: row.is_view, columns: [] }));
      if (row.column === null) continue;
      table.columns.push({
        name: row.column,
        dataType: row.type ?? '',
        isNullable: row.nullable ?? true,
        hasDefaultValue: row.default !== null,
        isAutoIncrementing: row.default?.startsWith('nextval(') ?? false,
      });
    }
    return [...tables.values()];
  }
  return {
    async getSchemas() {
      const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(db);
      return rows;
    },
    getTables,
    async getMetadata(options) {
      return { tables: await getTables(options) };
    },
  };
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
