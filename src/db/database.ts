import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Config } from '../config';
import type { Database } from './schema';
import { PGliteDialect } from './pglite-dialect';
import { prepareStatementsOn } from './prepared-statements';
import { CoalescingSocket } from './coalescing-socket';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  readonly db: Db;
  readonly kind: 'postgres' | 'pglite';
  /** Postgres only: connection settings for a dedicated LISTEN client. */
  readonly postgres?: { connectionString: string; schema?: string };
  ping(): Promise<void>;
  close(): Promise<void>;
}

const INT8 = 20;
const parseInt8 = (value: string) => Number(value);

export interface DatabaseOptions {
  /** Postgres: run everything in this schema (tests use a fresh schema per run). */
  schema?: string;
  /** PGlite: keep the database in memory instead of DATA_DIR. */
  inMemory?: boolean;
}

export async function openDatabase(
  settings: Config['database'],
  options: DatabaseOptions = {},
): Promise<DatabaseHandle> {
  if (settings.url) {
    const schema = options.schema;
    const pool = new pg.Pool({
      connectionString: settings.url,
      max: settings.poolSize,
      options: schema ? `-c search_path=${schema}` : undefined,
      // One write per query instead of one per protocol message (TLS, when configured, wraps this socket).
      stream: () => new CoalescingSocket(),
      types: {
        getTypeParser: ((oid: number, format?: any) =>
          oid === INT8 ? parseInt8 : pg.types.getTypeParser(oid, format)) as any,
      },
    });
    if (settings.preparedStatements) prepareStatementsOn(pool);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      kind: 'postgres',
      postgres: { connectionString: settings.url, schema },
      ping: async () => void (await sql`select 1`.execute(db)),
      close: () => db.destroy(),
    };
  }
  let dataDir: string | undefined;
  if (!options.inMemory) {
    dataDir = path.join(settings.dataDir, 'pgdata');
    fs.mkdirSync(dataDir, { recursive: true });
  }
  const pglite = new PGlite(dataDir, { parsers: { [INT8]: parseInt8 } });
  await pglite.waitReady;
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    db,
    kind: 'pglite',
    ping: async () => void (await sql`select 1`.execute(db)),
    close: () => db.destroy(),
  };
}

/** Runs fn in a transaction, joining the caller's when `executor` already is one. */
export function inTransaction<T>(executor: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  return executor.isTransaction ? fn(executor) : executor.transaction().execute(fn);
}
