import fs from 'node:fs';
import path from 'node:path';
import type { AccountsService } from '../accounts/accounts.service';
import type { Config } from '../config';
import type { DatabaseHandle, Db } from '../db/database';

/**
 * First start of an empty embedded database: one default account with a starter balance and one API key,
 * so the README quickstart works with no extra step. The key is printed once and kept (mode 0600) in
 * DATA_DIR/default-api-key for scripts.
 */
export async function bootstrapDefaultAccount(deps: { config: Config; database: DatabaseHandle; db: Db; accounts: AccountsService }): Promise<{ accountId: string; key: string; file: string } | null> {
  if (deps.database.kind !== 'pglite') return null;
  const existing = await deps.db.selectFrom('accounts').select('id').limit(1).executeTakeFirst();
  if (existing) return null;
  const account = await deps.accounts.createAccount({ name: 'default', balance: deps.config.admin.starterBalance });
  const { key } = await deps.accounts.createKey(account.id, { name: 'quickstart' });
  const file = path.join(deps.config.dataDir, 'default-api-key');
  fs.writeFileSync(file, key + '\n', { mode: 0o600 });
  return { accountId: account.id, key, file };
}
