import { toUnixSeconds } from '../time';
import type { AccountRow, ApiKeyRow } from './accounts.table';

export function accountToWire(account: AccountRow) {
  return {
    id: account.id,
    name: account.name,
    balance: account.balance,
    // What it can spend now: the balance less the holds of operations in flight.
    available: account.balance - account.held,
    mcp_enabled: account.mcp_enabled,
    // When an operator suspended it (its keys answer 403), as Unix seconds; null: active.
    suspended_at: account.suspended_at ? toUnixSeconds(account.suspended_at) : null,
    // The account's own limits; null: the configured default (api-decisions 26).
    limits: {
      requests_per_minute: account.requests_per_minute,
      tokens_per_minute: account.tokens_per_minute,
      concurrent_jobs: account.concurrent_jobs,
    },
    created_at: toUnixSeconds(account.created_at),
  };
}

/** A key as operators (and its account) see it: never the key text, which is shown once at creation. */
export function keyToWire(key: ApiKeyRow) {
  const expired = key.expires_at !== null && key.expires_at.getTime() <= Date.now();
  return {
    id: key.id,
    object: 'api_key' as const,
    name: key.name,
    status: key.status === 'active' && expired ? ('expired' as const) : key.status,
    created_at: toUnixSeconds(key.created_at),
    expires_at: key.expires_at ? toUnixSeconds(key.expires_at) : null,
    last_used_at: key.last_used_at ? toUnixSeconds(key.last_used_at) : null,
    disabled_at: key.disabled_at ? toUnixSeconds(key.disabled_at) : null,
  };
}
