import type OpenAI from 'openai';
import type { itemToWire } from '../../src/conversations/conversations.wire';
import type { chatChunks, chatCompletionToOpenAI } from '../../src/openai/openai-chat';
import type {
  inputItemToWire,
  outputItemToWire,
  ResponseWire,
  streamEventToWire,
} from '../../src/responses/responses.wire';

/**
 * Compile-time checks (nothing here runs; `npm run typecheck` compiles it) that the /openai/v1 replies are what
 * the `openai` package's own types say a reply is: a field OpenAI's reference marks required that a mapper stops
 * writing fails the build. Where this service deliberately differs, the field is replaced by ours, named below:
 * - `output_text` is the SDK's own convenience (it computes it), not on the wire;
 * - `error.code` is this service's `area.reason`, not one of OpenAI's codes;
 * - `incomplete_details.reason` is a string in storage (only `max_output_tokens` is written today);
 * - `usage` is null until the Response ends (as OpenAI's API sends it; its type says optional);
 * - `tool_choice` is stored as the request gave it; `tools` holds function and MCP tools, checked one by one;
 * - `status` of an MCP call includes `in_progress` while the loop runs (OpenAI's type has it too), and items carry
 *   our extra fields, which a client ignores.
 */
type Replaced<T, Keys extends keyof T, With> = Omit<T, Keys> & With;

type OpenAIResponse = Replaced<
  OpenAI.Responses.Response,
  'output_text' | 'error' | 'tool_choice' | 'tools' | 'usage' | 'incomplete_details',
  {
    // With OpenAI's `type` and `param` too, which the Vercel AI SDK requires of a failed Response.
    error: { code: string; message: string; type: string; param: string | null } | null;
    usage: OpenAI.Responses.ResponseUsage | null;
    incomplete_details: { reason: string } | null;
  }
>;
type OpenAIMessage = OpenAI.Responses.ResponseOutputMessage;
type OpenAIFunctionCall = OpenAI.Responses.ResponseFunctionToolCall;

type WireMessage = Extract<ReturnType<typeof outputItemToWire>, { type: 'message' }>;
type WireFunctionCall = Extract<ReturnType<typeof outputItemToWire>, { type: 'function_call' }>;
type WireFunctionTool = Extract<ResponseWire['tools'][number], { type: 'function' }>;
type WireAssistantInput = Extract<ReturnType<typeof inputItemToWire>, { type: 'message' }>;

export const openAIReplyChecks = {
  response: (wire: ResponseWire): OpenAIResponse => wire,
  message: (wire: WireMessage): OpenAIMessage => wire,
  functionCall: (wire: WireFunctionCall): OpenAIFunctionCall => wire,
  functionTool: (wire: WireFunctionTool): OpenAI.Responses.FunctionTool => wire,
  usage: (wire: NonNullable<ResponseWire['usage']>): OpenAI.Responses.ResponseUsage => wire,
  inputMessage: (
    wire: WireAssistantInput,
  ): Replaced<OpenAI.Responses.ResponseInputMessageItem, 'role' | 'content', { content: unknown[] }> => wire,
  outputText: (wire: WireMessage['content'][number]): OpenAI.Responses.ResponseOutputText => wire,
  conversationMessageContent: (
    wire: Extract<ReturnType<typeof itemToWire>, { content: unknown }>['content'][number],
  ): OpenAI.Conversations.Message['content'][number] => wire,
  chatCompletion: (wire: ReturnType<typeof chatCompletionToOpenAI>): OpenAI.Chat.ChatCompletion => wire,
  streamEvent: (wire: ReturnType<typeof streamEventToWire>): { type: string; sequence_number: number } => wire,
};

/** A chat chunk generator yields objects; its shape is checked by the streaming tests (test/openai/openai-streams.test.ts). */
export type ChatChunks = typeof chatChunks;
