import type { AccountsTable, ApiKeysTable, RequestWindowsTable } from '../accounts/accounts.table';
import type { AssistantsTable } from '../assistants/assistants.table';
import type { TranscriptionChunksTable, TranscriptionsTable } from '../audio/transcriptions.table';
import type { LedgerHoldsTable, LedgerTransactionsTable } from '../billing/ledger.table';
import type {
  CatalogModelsTable,
  CatalogPricesTable,
  CatalogRoutesTable,
  CatalogVendorsTable,
} from '../catalog/catalog.table';
import type { ConversationItemsTable, ConversationsTable } from '../conversations/conversations.table';
import type { JobStepsTable, JobsTable } from '../engine/jobs.table';
import type { StreamEventsTable } from '../events/events.table';
import type { ThreadMessagesTable, ThreadsTable } from '../threads/threads.table';
import type { IdempotencyKeysTable } from '../idempotency/idempotency.table';
import type { ResponsesTable } from '../responses/responses.table';
import type { RunsTable } from '../threads/runs.table';
import type { WebhookDeliveriesTable, WebhookSigningSecretsTable } from '../webhooks/webhooks.table';
import type { McpCallsTable } from '../mcp/mcp.table';

/** The whole database, composed from each slice's *.table.ts. */
export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  request_windows: RequestWindowsTable;
  ledger_transactions: LedgerTransactionsTable;
  ledger_holds: LedgerHoldsTable;
  conversations: ConversationsTable;
  conversation_items: ConversationItemsTable;
  assistants: AssistantsTable;
  catalog_vendors: CatalogVendorsTable;
  catalog_models: CatalogModelsTable;
  catalog_prices: CatalogPricesTable;
  catalog_routes: CatalogRoutesTable;
  responses: ResponsesTable;
  runs: RunsTable;
  stream_events: StreamEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  jobs: JobsTable;
  job_steps: JobStepsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_signing_secrets: WebhookSigningSecretsTable;
  threads: ThreadsTable;
  thread_messages: ThreadMessagesTable;
  transcriptions: TranscriptionsTable;
  transcription_chunks: TranscriptionChunksTable;
  mcp_calls: McpCallsTable;
}
