import type { Db } from '../db/database';
import type { AccountRow, ApiKeyRow } from './accounts.table';

export async function findAccount(executor: Db, id: string): Promise<AccountRow | undefined> {
  return executor.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * The calling account and key (GET /v1/getMe); both exist, since authentication just read them. An operator
 * acting for the account (`keyId` null) has no key: `key` null.
 */
export async function findAccountAndKey(
  db: Db,
  auth: { accountId: string; keyId: string | null },
): Promise<{ account: AccountRow; key: ApiKeyRow | null } | undefined> {
  const { keyId } = auth;
  // An operator acting for the account (admin token + X-Switchyard-Account) has no key.
  if (keyId === null) {
    const account = await findAccount(db, auth.accountId);
    return account && { account, key: null };
  }
  const [account, key] = await Promise.all([
    findAccount(db, auth.accountId),
    db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', keyId)
      .where('account_id', '=', auth.accountId)
      .executeTakeFirst(),
  ]);
  return account && key ? { account, key } : undefined;
}
