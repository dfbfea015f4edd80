import fs from 'node:fs';
import path from 'node:path';
import type { AccountsService } from '../accounts/accounts.service';
import type { Config } from '../config';
import type { DatabaseHandle, Db } from '../db/database';

/**
 * First start of an empty embedded database: one default account with a starter balance and one API key,
 * so the README quickstart works with no extra step. The key is kept (mode 0600) in DATA_DIR/default-api-key,
 * and shown once only on a terminal (firstStartBanner).
 */
export async function bootstrapDefaultAccount(deps: {
  config: Config;
  database: DatabaseHandle;
  db: Db;
  accounts: AccountsService;
}): Promise<{ accountId: string; key: string; file: string } | null> {
  if (deps.database.kind !== 'pglite') return null;
  const existing = await deps.db.selectFrom('accounts').select('id').limit(1).executeTakeFirst();
  if (existing) return null;
  const account = await deps.accounts.createAccount({ name: 'default', balance: deps.config.admin.starterBalance });
  const { key } = await deps.accounts.createKey(account.id, { name: 'quickstart' });
  const file = path.join(deps.config.dataDir, 'default-api-key');
  fs.writeFileSync(file, key + '\n', { mode: 0o600 });
  return { accountId: account.id, key, file };
}

/**
 * What the first start prints about the default account. Standard output is where the JSON log stream goes when it
 * is not a terminal (a container, a log collector), and a key never goes into logs: the banner then names the key
 * file; only a terminal, a person at the keyboard, is shown the key itself.
 */
export function firstStartBanner(
  bootstrap: { accountId: string; key: string; file: string },
  port: number,
  isTTY: boolean,
): string {
  const keyLine = isTTY
    ? `Its API key (also saved to ${bootstrap.file}):\n\n  ${bootstrap.key}\n\n`
    : `Its API key is in ${bootstrap.file} (mode 0600; not printed here: standard output is not a terminal).\n`;
  return (
    `Created the default account ${bootstrap.accountId}. ${keyLine}` +
    `Try: curl -s http://127.0.0.1:${port}/v2/models -H "X-Auth-Token: $(cat ${bootstrap.file})"`
  );
}
