import type Koa from 'koa';
import { createKeySigner } from './accounts/api-keys';
import { createAccountsService, type AccountsService } from './accounts/accounts.service';
import { loadOrCreateSecretFile } from './accounts/secret-files';
import { createLedger, type Ledger } from './billing/ledger';
import type { Config } from './config';
import { openDatabase, type DatabaseHandle, type DatabaseOptions, type Db } from './db/database';
import { migrateToLatest } from './db/migrate';
import { createApp } from './http/app';
import { createLogger, type Logger } from './logger';

/** Everything a route, service or activity may depend on; built once per process (or per test). */
export interface AppDeps {
  config: Config;
  logger: Logger;
  database: DatabaseHandle;
  db: Db;
  adminToken: string;
  ledger: Ledger;
  accounts: AccountsService;
}

export interface RuntimeOptions {
  logger?: Logger;
  database?: DatabaseOptions;
}

export interface Runtime {
  deps: AppDeps;
  app: Koa;
  /** Where a generated admin token was written, when it was generated on this start. */
  adminTokenFile?: string;
  close(): Promise<void>;
}

export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const database = await openDatabase(config.database, options.database);
  try {
    await migrateToLatest(database.db);
    const signingSecret = config.auth.signingSecret ?? loadOrCreateSecretFile(config.auth.dataDir, 'key-signing-secret').value;
    let adminTokenFile: string | undefined;
    let adminToken = config.admin.token;
    if (!adminToken) {
      const file = loadOrCreateSecretFile(config.admin.dataDir, 'admin-token');
      adminToken = file.value;
      adminTokenFile = file.path;
    }
    const db = database.db;
    const ledger = createLedger(db);
    const accounts = createAccountsService({ db, ledger, signer: createKeySigner(signingSecret, config.auth.issuer) });
    const deps: AppDeps = { config, logger, database, db, adminToken, ledger, accounts };
    const app = createApp(deps);
    return {
      deps,
      app,
      adminTokenFile,
      async close() {
        await database.close();
      },
    };
  } catch (error) {
    await database.close().catch(() => undefined);
    throw error;
  }
}
