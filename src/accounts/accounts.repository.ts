import type { Db } from '../db/database';
import type { AccountRow, ApiKeyRow } from './accounts.table';

export async function findAccount(executor: Db, id: string): Promise<AccountRow | undefined> {
  return executor.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The calling account and key (GET /v1/getMe); both exist, since authentication just read them. */
export async function findAccountAndKey(db: Db, auth: { accountId: string; keyId: string }): Promise<{ account: AccountRow; key: ApiKeyRow } | undefined> {
  const [account, key] = await Promise.all([
    findAccount(db, auth.accountId),
    db.selectFrom('api_keys').selectAll().where('id', '=', auth.keyId).where('account_id', '=', auth.accountId).executeTakeFirst(),
  ]);
  return account && key ? { account, key } : undefined;
}
