import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, NullableTimestamp } from '../db/columns';

export interface AccountsTable {
  id: string;
  name: string;
  balance: ColumnType<number, number | undefined, number>;
  /** The sum of the account's open holds (ledger_holds): `balance - held` is what it can still spend. */
  held: ColumnType<number, number | undefined, number>;
  /** The part of a kopeck the account paid beyond the exact sum of its costs, 0 <= carry < 1 (numeric, as text; ledger.ts). */
  cost_carry: ColumnType<string, string | undefined, string>;
  /** When an operator suspended the account (its keys answer 403); null: active. */
  suspended_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  mcp_enabled: ColumnType<boolean, boolean | undefined, boolean>;
  /** Limits set by an operator (api-decisions 26); null: the configured default. */
  requests_per_minute: ColumnType<number | null, number | null | undefined, number | null>;
  tokens_per_minute: ColumnType<number | null, number | null | undefined, number | null>;
  concurrent_jobs: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: CreatedAt;
}

/** The requests of an account with a requests-per-minute limit, per one-minute window. */
export interface RequestWindowsTable {
  account_id: string;
  window_start: Date;
  requests: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string | null;
  status: ColumnType<'active' | 'disabled', 'active' | 'disabled' | undefined, 'active' | 'disabled'>;
  created_at: CreatedAt;
  expires_at: NullableTimestamp;
  disabled_at: NullableTimestamp;
  /** Refreshed on use at most once a minute (accounts.service.ts), so it is right to the minute. */
  last_used_at: NullableTimestamp;
}

export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
