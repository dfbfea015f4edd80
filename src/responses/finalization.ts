import { debitRow } from '../billing/ledger';
import { priceCall } from '../billing/pricing';
import type { CatalogModel, Price } from '../catalog/catalog-types';
import type { StreamEvent } from '../events/stream-event';
import type { FinalOutcome } from '../../workflows/response.flow';
import { type OutputItem, type ResponseStatus, type ResponseUsage } from './response-types';
import { responseToWire } from './responses.wire';
import type { ResponseRow } from './responses.table';

/** One Response's finalisation, as plain JSON for writeFinalizations (responses.repository.ts). */
export interface FinalRecord {
  id: string;
  /** Its account: locked before the statement that debits it (writeFinalizations). */
  account_id: string;
  status: string;
  output: OutputItem[];
  usage: ResponseUsage;
  error: unknown;
  incomplete_details: unknown;
  completed_at: string;
  /** The final event; its sequence number is filled in by the statement. */
  final_event: unknown;
  tail_first: number | null;
  tail_last: number | null;
  tail_events: StreamEvent[] | null;
  debit_id: string | null;
  /** The exact cost in kopecks (a decimal string); the debit is computed from it with the account's carry. */
  debit_cost: string | null;
  debit_currency: string | null;
  /** JSON text, as debitRow writes it. */
  debit_metadata: string | null;
  debit_usage: string | null;
  debit_operation_key: string | null;
  /** A Response to a route: the target that served it, stored as its model and vendor; null for a model's. */
  model: string | null;
  vendor: string | null;
}

/**
 * What finalising a Response with `outcome` writes: its final status, output and usage, the debit of what the
 * vendor reported, the generation's unwritten closing events and the final event (whose sequence number the
 * statement fills in: a failed or cancelled generation may not know it). Pure: `row` is the Response as stored.
 */
export function finalRecordOf(
  row: ResponseRow,
  outcome: FinalOutcome,
  price: Price | null,
  /** A Response to a route (row.model): the target that served it, whose price `price` is (api-decisions 32). */
  served?: CatalogModel,
): { record: FinalRecord; status: ResponseStatus; unwritten: StreamEvent[] } {
  // A cancelled MCP loop still bills the model calls of the rounds it finished.
  const tokens = { input: outcome.inputTokens ?? 0, output: outcome.outputTokens ?? 0 };
  const { cost, exact } = priceCall(price, tokens);
  const usage: ResponseUsage = {
    input_tokens: tokens.input,
    output_tokens: tokens.output,
    total_tokens: tokens.input + tokens.output,
    cost,
  };
  const status = outcome.kind === 'generated' ? outcome.status : outcome.kind;
  const output = outcome.kind === 'generated' ? (outcome.output as OutputItem[]) : [];
  const final: ResponseRow = {
    ...row,
    ...(served ? { model: served.code, vendor: served.vendor } : {}),
    status,
    output,
    usage,
    error: outcome.kind === 'failed' ? { code: outcome.code, message: outcome.message } : null,
    incomplete_details:
      outcome.kind === 'generated' && outcome.incompleteReason ? { reason: outcome.incompleteReason } : null,
    completed_at: new Date(),
  };
  // Also a cost of 0: the debit statement then only releases the Response's hold.
  const debit = debitRow({
    accountId: row.account_id,
    cost: exact,
    operationKey: `response:${row.id}`,
    metadata: {
      source: 'api',
      vendor: final.vendor,
      model: final.model,
      ...(served ? { route: row.model } : {}),
      service: 'responses',
      response_id: row.id,
    },
    usage: {
      prompt_tokens: usage.input_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.total_tokens,
    },
  });
  const unwritten = (outcome.kind === 'cancelled' ? [] : (outcome.unwrittenEvents ?? [])) as StreamEvent[];
  const record: FinalRecord = {
    id: row.id,
    account_id: row.account_id,
    status,
    output,
    usage,
    error: final.error,
    incomplete_details: final.incomplete_details,
    completed_at: final.completed_at!.toISOString(),
    final_event: { type: `response.${status}`, sequence_number: 0, response: responseToWire(final) },
    tail_first: unwritten[0]?.sequence_number ?? null,
    tail_last: unwritten.at(-1)?.sequence_number ?? null,
    tail_events: unwritten.length > 0 ? unwritten : null,
    debit_id: debit.id,
    debit_cost: debit.cost,
    debit_currency: debit.currency,
    debit_metadata: debit.metadata,
    debit_usage: debit.usage,
    debit_operation_key: debit.operation_key,
    model: served?.code ?? null,
    vendor: served?.vendor ?? null,
  };
  return { record, status, unwritten };
}
