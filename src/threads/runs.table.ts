import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, Json, JsonDefault, NullableTimestamp, Serial } from '../db/columns';
import type { FunctionToolSpec } from '../responses/response-types';

/** api-decisions 6. Active: queued, in_progress, requires_action, cancelling (one per thread at most). */
export const RUN_STATUSES = [
  'queued',
  'in_progress',
  'requires_action',
  'cancelling',
  'cancelled',
  'failed',
  'completed',
  'incomplete',
  'expired',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Everything a Run's workflow needs, fixed at creation (its Assistant already resolved). */
export interface RunRequest {
  additional_instructions: string | null;
  tools: FunctionToolSpec[];
  temperature: number | null;
  top_p: number | null;
  reasoning_effort: 'low' | 'medium' | 'high' | null;
  max_completion_tokens: number | null;
  parallel_tool_calls: boolean;
  message_limit: number | null;
}

/** A tool call the model asked for, and its output once the client submitted it. */
export interface RunToolCall {
  id: string;
  name: string;
  arguments: string;
  output?: string;
}

/** One vendor call of a Run that asked for tools: its calls, in order (the Run's transcript). */
export interface RunRound {
  calls: RunToolCall[];
}

export interface RunUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost: number;
}

export interface RunError {
  code: string;
  message: string;
}

export interface RunsTable {
  seq: Serial;
  id: string;
  thread_id: string;
  account_id: string;
  assistant_id: number;
  status: ColumnType<RunStatus, RunStatus | undefined, RunStatus>;
  model: string;
  vendor: string;
  instructions: string | null;
  request: Json<RunRequest>;
  /** The rounds that asked for tools, with the outputs submitted for them. */
  transcript: JsonDefault<RunRound[]>;
  /** Vendor calls made and billed so far. */
  rounds: ColumnType<number, number | undefined, number>;
  required_action: JsonDefault<RequiredAction | null>;
  usage: JsonDefault<RunUsage | null>;
  last_error: JsonDefault<RunError | null>;
  metadata: JsonDefault<Record<string, string>>;
  created_at: CreatedAt;
  started_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  cancelled_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  expires_at: NullableTimestamp;
  cancel_requested_at: NullableTimestamp;
}

/** api-decisions 6. */
export interface RequiredAction {
  type: 'submit_tool_outputs';
  submit_tool_outputs: {
    tool_calls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  };
}

export type RunRow = Selectable<RunsTable>;

export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = ['queued', 'in_progress', 'requires_action', 'cancelling'];
export const isActiveRunStatus = (status: RunStatus) => ACTIVE_RUN_STATUSES.includes(status);
export const FINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'incomplete', 'failed', 'cancelled', 'expired'];

/** The operation key of a Run's round: its hold and its debit (each model call of a Run is billed as it ends). */
export const runRoundOperationKey = (runId: string, round: number) => `run:${runId}:${round}`;
