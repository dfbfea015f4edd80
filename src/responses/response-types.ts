import type { TextFormat } from './responses.schema';
import type { McpCallItem, McpListToolsItem, McpServerSpec } from '../mcp/mcp-types';

/** Wire and storage shapes of a Response (spec: Response, output item kinds; api-decisions 13, 16). */

/** Every status a Response can have (the API's filters and the OpenAPI document list these). */
export const RESPONSE_STATUSES = ['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled'] as const;
export type ResponseStatus = (typeof RESPONSE_STATUSES)[number];
export const FINAL_STATUSES: readonly ResponseStatus[] = ['completed', 'incomplete', 'failed', 'cancelled'];
export const isFinalStatus = (status: ResponseStatus) => FINAL_STATUSES.includes(status);

export interface OutputText {
  type: 'output_text';
  text: string;
}

export interface MessageOutputItem {
  id: string;
  type: 'message';
  role: 'assistant';
  status: 'completed' | 'in_progress' | 'incomplete';
  content: OutputText[];
}

export interface FunctionCallOutputItem {
  id: string;
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
  status: 'completed' | 'in_progress';
}

export type OutputItem = MessageOutputItem | FunctionCallOutputItem | McpListToolsItem | McpCallItem;

export interface ResponseUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cost: number;
}

export interface ResponseErrorBody {
  code: string;
  message: string;
}

export interface FunctionToolSpec {
  type: 'function';
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

export type McpToolSpec = McpServerSpec;

/** The temperature of a Response that sets none (nor its Assistant): the spec's default, sent to the vendor. */
export const DEFAULT_TEMPERATURE = 1;

/** A new input item of a Response, normalised at creation. */
export type InputItem =
  | { type: 'message'; role: 'user' | 'assistant' | 'system' | 'developer'; content: string }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string };

/** The id an input item gets as a conversation item and in the input items list: derived, so it is stable. */
export function inputItemId(responseId: string, index: number, item: InputItem): string {
  const prefix = item.type === 'message' ? 'msg' : item.type === 'function_call' ? 'fc' : 'fco';
  return `${prefix}_${responseId.slice(5)}_in${index}`;
}

/** Everything the workflow needs to run the Response, fixed at creation (assistant already resolved). */
export interface ResponseRequest {
  input: InputItem[];
  instructions: string | null;
  temperature: number | null;
  top_p: number | null;
  reasoning_effort: 'minimal' | 'low' | 'medium' | 'high' | null;
  verbosity: 'low' | 'medium' | 'high' | null;
  parallel_tool_calls: boolean;
  message_limit: number | null;
  truncation: 'auto' | 'disabled';
  tools: Array<FunctionToolSpec | McpToolSpec>;
  tool_choice: unknown;
  max_output_tokens: number | null;
  stream: boolean;
  /** Structured output (`text.format` json_object or json_schema); absent for plain text and on older rows. */
  text_format?: Exclude<TextFormat, { type: 'text' }>;
  /**
   * What the billing hold placed at creation covers (absent on Responses from before holds): a turn whose prompt
   * is larger, or a later turn of an MCP loop, raises the hold first (response.activities.ts).
   */
  hold?: { input_tokens: number; output_tokens: number };
  /**
   * The input items were appended to the Response's conversation at its creation (api-decisions 30). Absent on
   * Responses without a conversation and on those created before: their input is appended with their output.
   */
  input_in_conversation?: true;
}
