import type { Db } from '../db/database';
import { invalidRequest, notFound } from '../errors';
import type { LedgerTransactionRow } from '../billing/ledger.table';
import { createOrganizationRepository } from './organization.repository';

/** The account's own view of its money: balance and transaction history (spec, Account). */
export function createOrganizationService(deps: { db: Db }) {
  const repository = createOrganizationRepository(deps.db);

  async function getBalance(accountId: string): Promise<{ balance: number; available: number }> {
    const balance = await repository.findBalance(accountId);
    // The key was authenticated a moment ago; a missing account means it was deleted in between.
    if (balance === undefined) throw notFound('organization', 'The account no longer exists.');
    return balance;
  }

  /**
   * One page, newest first. `afterId` is the last id of the previous page; it must be a transaction of
   * this account (another account's id is reported exactly like an unknown one).
   */
  async function listTransactions(accountId: string, input: { limit: number; afterId?: string }): Promise<LedgerTransactionRow[]> {
    let beforeSeq: number | undefined;
    if (input.afterId !== undefined) {
      beforeSeq = await repository.findTransactionSeq(accountId, input.afterId);
      if (beforeSeq === undefined) {
        throw invalidRequest('organization', `after_id ${input.afterId} is not a transaction of this account.`);
      }
    }
    return repository.listTransactions(accountId, { limit: input.limit, beforeSeq });
  }

  return { getBalance, listTransactions };
}

export type OrganizationService = ReturnType<typeof createOrganizationService>;
