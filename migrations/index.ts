import type { Migration } from 'kysely';
import * as initial from './20261122000000_initial';
import * as streamEvents from './20261124000000_stream_events';
import * as threads from './20261124010000_threads';
import * as runs from './20261124020000_runs';
import * as idempotentReplies from './20261124030000_idempotent_replies';
import * as audio from './20261125000000_audio';
import * as mcp from './20261126000000_mcp';
import * as holds from './20261127000000_holds';
import * as limits from './20261127010000_limits';
import * as keyLastUse from './20261128000000_key_last_use';
import * as runsByAccount from './20261129000000_runs_by_account';
import * as placeHolds from './20261130000000_place_holds';
import * as placeHoldsNoKeyLock from './20261201000000_place_holds_no_key_lock';
import * as costCarry from './20261202000000_cost_carry';
import * as accountSuspension from './20261202010000_account_suspension';
import * as oneIdempotencyTable from './20261203000000_one_idempotency_table';
import * as catalogRoutes from './20261204000000_catalog_routes';
import * as webhookSigning from './20261205000000_webhook_signing';
import * as catalogRouteOrigin from './20261206000000_catalog_route_origin';
import * as storedRowBytes from './20261206020000_stored_row_bytes';
import * as jobsByAccount from './20261206030000_jobs_by_account';
import * as debitOperations from './20261207000000_debit_operations';
import * as debitOperationsIndexPaths from './20261208000000_debit_operations_index_paths';
import * as placeHoldsAvailable from './20261209000000_place_holds_available';

/** Every migration, by timestamped name. A static list works the same from src (tests) and dist (build). */
export const migrations: Record<string, Migration> = {
  '20261122000000_initial': initial,
  '20261124000000_stream_events': streamEvents,
  '20261124010000_threads': threads,
  '20261124020000_runs': runs,
  '20261124030000_idempotent_replies': idempotentReplies,
  '20261125000000_audio': audio,
  '20261126000000_mcp': mcp,
  '20261127000000_holds': holds,
  '20261127010000_limits': limits,
  '20261128000000_key_last_use': keyLastUse,
  '20261129000000_runs_by_account': runsByAccount,
  '20261130000000_place_holds': placeHolds,
  '20261201000000_place_holds_no_key_lock': placeHoldsNoKeyLock,
  '20261202000000_cost_carry': costCarry,
  '20261202010000_account_suspension': accountSuspension,
  '20261203000000_one_idempotency_table': oneIdempotencyTable,
  '20261204000000_catalog_routes': catalogRoutes,
  '20261205000000_webhook_signing': webhookSigning,
  '20261206000000_catalog_route_origin': catalogRouteOrigin,
  '20261206020000_stored_row_bytes': storedRowBytes,
  '20261206030000_jobs_by_account': jobsByAccount,
  '20261207000000_debit_operations': debitOperations,
  '20261208000000_debit_operations_index_paths': debitOperationsIndexPaths,
  '20261209000000_place_holds_available': placeHoldsAvailable,
};
