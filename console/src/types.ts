/** The shapes of the service's replies the console reads (see /openapi.json). */
export interface ListEnvelope<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  first_id?: string | null;
  last_id?: string | null;
}

export interface ApiKey {
  id: string;
  name: string | null;
  status: 'active' | 'disabled' | 'expired';
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  disabled_at: number | null;
  current: boolean;
}

export interface Balance {
  balance: number;
  available: number;
}

export interface Transaction {
  id: string;
  type: 'debit' | 'credit';
  amount: number;
  currency?: string;
  /** ISO 8601 (the spec's transaction record). */
  created_at: string;
  metadata: Record<string, unknown>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

export interface UsageRow {
  key: string;
  amount: number;
  transactions: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface Usage {
  from: number;
  to: number;
  group_by: 'day' | 'model' | 'service';
  data: UsageRow[];
  total: Omit<UsageRow, 'key'>;
}

export interface WebhookOutcome {
  status: 'pending' | 'delivered' | 'failed' | 'refused';
  response_status: number | null;
  error: string | null;
  attempted_at: number | null;
}

export interface ErrorBody {
  code: string;
  message: string;
}

export interface ResponseSummary {
  id: string;
  status: string;
  model: string;
  vendor: string;
  background: boolean;
  conversation_id: string | null;
  created_at: number;
  completed_at: number | null;
  duration_ms: number | null;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number; cost: number } | null;
  error: ErrorBody | null;
  webhook: WebhookOutcome | null;
}

export interface RunSummary {
  id: string;
  thread_id: string;
  status: string;
  model: string;
  created_at: number;
  completed_at: number | null;
  duration_ms: number | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost: number } | null;
  last_error: ErrorBody | null;
}

export interface OutputContent {
  type: string;
  text?: string;
}

export interface OutputItem {
  id?: string;
  type: string;
  role?: string;
  status?: string;
  content?: OutputContent[];
  name?: string;
  arguments?: string;
  call_id?: string;
  output?: string;
}

export interface ResponseObject {
  id: string;
  status: string;
  model: string;
  background?: boolean;
  output: OutputItem[];
  usage: { input_tokens: number; output_tokens: number; total_tokens: number; cost?: number } | null;
  error: ErrorBody | null;
  incomplete_details?: { reason: string } | null;
  created_at: number;
}

export interface InputItem {
  id: string;
  type: string;
  role?: string;
  content?: OutputContent[] | string;
  name?: string;
  arguments?: string;
  output?: string;
}

export interface CatalogModel {
  code: string;
  name: string;
  available: boolean;
  vendor: string;
  type: string;
  streaming: boolean;
  default: boolean;
  protocols: string[];
}

export interface Price {
  unit: string;
  count: number;
  input: number;
  output: number;
}

export interface AdminAccount {
  id: string;
  name: string;
  balance: number;
  available: number;
  created_at: number;
}

export const RESPONSE_STATUSES = ['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled'] as const;
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

/** The text of a message item's output_text parts. */
export const itemText = (item: { content?: OutputContent[] | string }) =>
  typeof item.content === 'string' ? item.content : (item.content ?? []).map((part) => part.text ?? '').join('');
