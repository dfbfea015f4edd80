import type { Db } from '../db/database';
import type { AccountRow, ApiKeyRow } from './accounts.table';

/** The calling account and key (GET /v1/getMe); both exist, since authentication just read them. */
export async function findAccountAndKey(db: Db, auth: { accountId: string; keyId: string }): Promise<{ account: AccountRow; key: ApiKeyRow } | undefined> {
  const [account, key] = await Promise.all([
    db.selectFrom('accounts').selectAll().where('id', '=', auth.accountId).executeTakeFirst(),
    db.selectFrom('api_keys').selectAll().where('id', '=', auth.keyId).where('account_id', '=', auth.accountId).executeTakeFirst(),
  ]);
  return account && key ? { account, key } : undefined;
}
