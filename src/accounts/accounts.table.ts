import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, NullableTimestamp } from '../db/columns';

export interface AccountsTable {
  id: string;
  name: string;
  balance: ColumnType<number, number | undefined, number>;
  /** The sum of the account's open holds (ledger_holds): `balance - held` is what it can still spend. */
  held: ColumnType<number, number | undefined, number>;
  mcp_enabled: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string | null;
  status: ColumnType<'active' | 'disabled', 'active' | 'disabled' | undefined, 'active' | 'disabled'>;
  created_at: CreatedAt;
  expires_at: NullableTimestamp;
  disabled_at: NullableTimestamp;
}

export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
