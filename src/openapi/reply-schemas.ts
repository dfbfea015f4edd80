import { z } from 'zod';
import { modelTypeSchema } from '../catalog/catalog.schema';
import { RESPONSE_STATUSES } from '../responses/response-types';
import { RUN_STATUSES } from '../threads/runs.table';

/**
 * The documented shapes of the replies (GET /openapi.json). Requests are documented from the schemas the routes
 * validate with; replies are built by the `*ToWire` mappers, whose TypeScript types are checked against these
 * (wire-checks.ts), and the suite checks real replies against them (test/openapi).
 */
const unixSeconds = z.number().int().describe('Unix time, seconds');
const nullableSeconds = unixSeconds.nullable();
const metadata = z.record(z.string(), z.string()).describe('Up to 16 string pairs');
const looseObject = z.record(z.string(), z.unknown());

export const errorEnvelope = z
  .object({
    error: z.object({
      code: z.string().describe('`area.reason`, e.g. `response.invalid_request`'),
      message: z.string(),
    }),
  })
  .meta({ id: 'Error' });
export const openAIErrorBody = z
  .object({
    error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string() }),
  })
  .meta({ id: 'OpenAIError' });

export const listOf = <Item extends z.ZodType>(item: Item) =>
  z.object({
    object: z.literal('list'),
    data: z.array(item),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  });

export const deleted = (object: string) =>
  z.object({ id: z.string(), object: z.literal(object), deleted: z.literal(true) });

// Responses
const outputText = z.object({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.unknown()).describe('Always empty'),
  logprobs: z.array(z.unknown()).describe('Always empty'),
});
const mcpTool = z.object({
  name: z.string(),
  description: z.string().nullable().optional(),
  input_schema: looseObject.optional(),
  annotations: z.unknown().optional(),
});
export const outputItem = z
  .discriminatedUnion('type', [
    z.object({
      id: z.string(),
      type: z.literal('message'),
      role: z.literal('assistant'),
      status: z.enum(['completed', 'in_progress', 'incomplete']),
      content: z.array(outputText),
    }),
    z.object({
      id: z.string(),
      type: z.literal('function_call'),
      call_id: z.string(),
      name: z.string(),
      arguments: z.string(),
      status: z.enum(['completed', 'in_progress']),
    }),
    z.object({
      id: z.string(),
      type: z.literal('mcp_list_tools'),
      server_label: z.string(),
      tools: z.array(mcpTool),
      error: z.string().nullable(),
    }),
    z.object({
      id: z.string(),
      type: z.literal('mcp_call'),
      server_label: z.string(),
      name: z.string(),
      arguments: z.string(),
      output: z.string().nullable(),
      error: z.string().nullable(),
      status: z.enum(['in_progress', 'completed', 'failed']),
    }),
  ])
  .meta({ id: 'OutputItem' });

const responseStatus = z.enum(RESPONSE_STATUSES);
const storedUsage = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  cost: z.number().describe('kopecks'),
});
const responseUsage = storedUsage.extend({
  input_tokens_details: z
    .object({ cached_tokens: z.number().int(), cache_write_tokens: z.number().int() })
    .describe("OpenAI's field; always 0"),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }).describe("OpenAI's field; always 0"),
});
const errorBody = z.object({ code: z.string(), message: z.string() });
/** A failed Response's error: the spec's code and message, with OpenAI's type and param (response-wire.ts). */
const responseErrorBody = errorBody.extend({
  type: z.string().describe("OpenAI's error type (`invalid_request_error`, `server_error`, ...)"),
  param: z.null(),
});

export const responseObject = z
  .object({
    id: z.string(),
    object: z.literal('response'),
    created_at: unixSeconds,
    status: responseStatus,
    background: z.boolean(),
    model: z.string(),
    output: z.array(outputItem).describe('Empty while queued, and after cancellation'),
    conversation: z.object({ id: z.string() }).optional(),
    previous_response_id: z.string().optional(),
    assistant_id: z.number().int().optional(),
    instructions: z.string().nullable(),
    temperature: z.number().nullable(),
    top_p: z.number().nullable(),
    max_output_tokens: z.number().int().nullable(),
    parallel_tool_calls: z.boolean(),
    tool_choice: z.unknown(),
    tools: z
      .array(
        z.union([
          z.object({
            type: z.literal('function'),
            name: z.string(),
            description: z.string().optional(),
            parameters: looseObject.nullable(),
            strict: z.boolean().nullable(),
          }),
          z.object({
            type: z.literal('mcp'),
            server_label: z.string(),
            server_url: z.string(),
            allowed_tools: z.array(z.string()).optional(),
            require_approval: z.string(),
          }),
        ]),
      )
      .describe('Function and MCP tools (an MCP tool without its authorization and headers)'),
    truncation: z.enum(['auto', 'disabled']),
    text: z.object({ format: looseObject }).optional().describe('Structured output, when it was asked for'),
    metadata,
    usage: responseUsage.nullable(),
    error: responseErrorBody.nullable(),
    incomplete_details: z.object({ reason: z.string() }).nullable(),
    completed_at: nullableSeconds,
  })
  .meta({ id: 'Response' });

export const streamEvent = z
  .looseObject({
    type: z.string().describe('The event name, also on the `event:` line'),
    sequence_number: z.number().int(),
  })
  .meta({
    id: 'StreamEvent',
    description:
      'One Server-Sent Event: `response.created`, `response.output_text.delta`, ..., then exactly one of `response.completed`, `.incomplete`, `.failed`, `.cancelled`',
  });

export const inputItemObject = z
  .looseObject({
    id: z.string(),
    type: z.enum(['message', 'function_call', 'function_call_output']),
    status: z.literal('completed'),
  })
  .meta({ id: 'InputItem' });

// Conversations
export const conversationObject = z
  .object({ id: z.string(), object: z.literal('conversation'), created_at: unixSeconds, metadata })
  .meta({ id: 'Conversation' });
export const conversationItem = z
  .looseObject({
    id: z.string(),
    object: z.literal('conversation.item'),
    type: z.enum(['message', 'function_call', 'function_call_output', 'mcp_list_tools', 'mcp_call']),
    created_at: unixSeconds,
    metadata: z.record(z.string(), z.unknown()),
    response_id: z.string().optional(),
  })
  .meta({ id: 'ConversationItem' });

// Organization, catalog
export const balanceObject = z
  .object({
    balance: z.number().int().describe('kopecks'),
    available: z.number().int().describe('the balance less the holds of operations in flight'),
  })
  .meta({ id: 'Balance' });
export const transactionObject = z
  .object({
    id: z.string(),
    type: z.enum(['credit', 'debit']),
    amount: z.number().int().describe('kopecks'),
    currency: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    usage: z
      .object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() })
      .nullable(),
    created_at: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'Transaction' });
export const modelRecord = z
  .looseObject({
    code: z.string(),
    name: z.string(),
    available: z.boolean(),
    vendor: z.string(),
    type: modelTypeSchema,
    vision: z.boolean(),
    streaming: z.boolean(),
    function_calling: z.boolean(),
    structured_outputs: z.boolean(),
    max_output: z.number().int(),
    context_window: z.number().int(),
    default: z.boolean(),
    web_visible: z.boolean(),
    protocols: z.array(z.string()),
    route: z
      .object({
        strategy: z.enum(['fallback', 'weighted']),
        targets: z.array(z.object({ model: z.string(), weight: z.number().optional() })),
      })
      .optional()
      .describe('A route (api-decisions 32): an alias served by these targets; its vendor is "switchyard"'),
  })
  .meta({ id: 'Model' });
/** A route as the admin API shows it (api-decisions 34). */
export const routeRecord = z
  .object({
    object: z.literal('route'),
    code: z.string(),
    name: z.string(),
    type: modelTypeSchema,
    strategy: z.enum(['fallback', 'weighted']),
    targets: z.array(z.object({ model: z.string(), weight: z.number().optional() })),
    origin: z.enum(['catalog', 'admin']).describe("catalog: the catalog file's (changed there); admin: created here"),
    served: z.boolean().describe('False for an admin route that no longer fits the catalog file (change or delete it)'),
  })
  .meta({ id: 'Route' });
export const vendorRecord = z
  .object({ code: z.string(), name: z.string(), available: z.boolean(), model_types: z.array(z.string()) })
  .meta({ id: 'Vendor' });
export const priceRecord = z
  .object({ unit: z.string(), count: z.number(), input: z.number(), output: z.number() })
  .meta({ id: 'Price' });
export const modelsByCode = z.record(z.string(), modelRecord).describe('Models keyed by code');

// Embeddings, chat
const tokenUsage = z.object({ prompt_tokens: z.number().int(), total_tokens: z.number().int() });
export const embeddingObject = z
  .object({
    embedding: z.union([z.array(z.number()), z.string().describe('base64 of little-endian float32')]),
    model: z.string(),
    usage: tokenUsage,
  })
  .meta({ id: 'Embedding' });
export const legacyChatCompletion = z
  .object({
    created: unixSeconds,
    model: z.string(),
    message: z.object({ role: z.literal('assistant'), content: z.string() }),
    tools_calls: z.array(
      z.object({ id: z.string(), type: z.literal('function'), name: z.string(), arguments: z.string() }),
    ),
    usage: z.object({
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
      total_tokens: z.number().int(),
      cost: z.number(),
    }),
    finish_reason: z.enum(['COMPLETE', 'MAX_TOKENS', 'TOOL_CALLS', 'CONTENT_FILTER']),
  })
  .meta({ id: 'LegacyChatCompletion' });
export const v1ChatReply = z.object({ message: z.object({ role: z.literal('assistant'), content: z.string() }) });

// OpenAI-compatible surface
export const openAIModel = z
  .object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })
  .meta({ id: 'OpenAIModel' });
export const openAIModelList = z.object({ object: z.literal('list'), data: z.array(openAIModel) });
export const openAIEmbeddings = z.object({
  object: z.literal('list'),
  data: z.array(
    z.object({
      object: z.literal('embedding'),
      index: z.number().int(),
      embedding: z.union([z.array(z.number()), z.string()]),
    }),
  ),
  model: z.string(),
  usage: tokenUsage,
});
const openAIToolCall = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export const openAIChatCompletion = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: unixSeconds,
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal('assistant'),
          content: z.string().nullable(),
          refusal: z.null(),
          tool_calls: z.array(openAIToolCall).optional(),
        }),
        logprobs: z.null(),
        finish_reason: z.enum(['stop', 'length', 'tool_calls', 'content_filter']),
      }),
    ),
    usage: z.object({
      prompt_tokens: z.number().int(),
      completion_tokens: z.number().int(),
      total_tokens: z.number().int(),
      prompt_tokens_details: z.object({ cached_tokens: z.number().int() }).describe("OpenAI's field; always 0"),
      completion_tokens_details: z.object({ reasoning_tokens: z.number().int() }).describe("OpenAI's field; always 0"),
    }),
  })
  .meta({ id: 'OpenAIChatCompletion' });
export const openAIChatChunk = z
  .looseObject({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: unixSeconds,
    model: z.string(),
    choices: z.array(looseObject),
  })
  .meta({ id: 'OpenAIChatCompletionChunk', description: 'One `data:` frame; the stream ends with `data: [DONE]`' });

// Assistants, threads, runs
export const assistantObject = z
  .object({
    id: z.number().int(),
    object: z.literal('assistant'),
    created_at: unixSeconds,
    name: z.string().nullable(),
    description: z.string().nullable(),
    model: z.string(),
    vendor: z.string(),
    instructions: z.string().nullable(),
    reasoning_effort: z.string().nullable(),
    temperature: z.number().nullable(),
    tools: z.array(z.unknown()),
    tool_resources: z.unknown(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Assistant' });
export const assistantListEntry = z.object({
  id: z.number().int(),
  name: z.string().nullable(),
  model: z.string(),
  vendor: z.string(),
});
export const threadObject = z
  .object({
    id: z.string(),
    object: z.literal('thread'),
    created_at: unixSeconds,
    metadata: z.record(z.string(), z.unknown()),
    tool_resources: z.unknown(),
  })
  .meta({ id: 'Thread' });
export const threadMessage = z
  .object({
    id: z.string(),
    object: z.literal('thread.message'),
    created_at: unixSeconds,
    thread_id: z.string(),
    role: z.enum(['user', 'assistant']),
    status: z.string(),
    content: z.array(looseObject),
    metadata: z.record(z.string(), z.unknown()),
    assistant_id: z.number().int().nullable(),
    run_id: z.string().nullable(),
  })
  .meta({ id: 'ThreadMessage' });
const runStatus = z.enum(RUN_STATUSES);
export const runObject = z
  .looseObject({
    id: z.string(),
    object: z.literal('thread.run'),
    created_at: unixSeconds,
    thread_id: z.string(),
    assistant_id: z.number().int().nullable(),
    status: runStatus,
    model: z.string(),
    required_action: z.unknown(),
    usage: z.unknown(),
    last_error: z.object({ code: z.string(), message: z.string() }).nullable(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Run' });

// Audio
export const transcriptionReply = z
  .looseObject({
    text: z.string(),
    language: z.string().nullable(),
    duration: z.number(),
    segments: z.array(
      z.object({ text: z.string(), start: z.number(), end: z.number(), speaker_id: z.string().nullable().optional() }),
    ),
    usage: z.object({ cost: z.number() }),
  })
  .meta({ id: 'Transcription' });
export const transcriptionSubmitted = z
  .object({ request_id: z.string(), status: z.string() })
  .meta({ id: 'TranscriptionStatus' });
const durationUsage = z.object({
  type: z.literal('duration'),
  seconds: z.number().int().describe('Whole seconds, as billed'),
});
export const openAITranscription = z
  .object({ text: z.string(), usage: durationUsage })
  .meta({ id: 'OpenAITranscription' });
export const openAITranscriptionVerbose = z
  .object({
    task: z.literal('transcribe'),
    language: z.string(),
    duration: z.number(),
    text: z.string(),
    segments: z.array(
      z.object({
        id: z.number().int(),
        seek: z.number().int(),
        start: z.number(),
        end: z.number(),
        text: z.string(),
        tokens: z.array(z.number().int()).describe('Always empty: the models here expose no token ids'),
        temperature: z.number(),
        avg_logprob: z.number().describe('Always 0: not measured here'),
        compression_ratio: z.number().describe('Always 0: not measured here'),
        no_speech_prob: z.number().describe('Always 0: not measured here'),
      }),
    ),
    usage: durationUsage,
  })
  .meta({ id: 'OpenAITranscriptionVerbose' });

// Admin, v1
export const accountObject = z
  .object({
    id: z.string(),
    name: z.string(),
    balance: z.number().int(),
    available: z.number().int(),
    mcp_enabled: z.boolean(),
    suspended_at: unixSeconds.nullable().describe('when an operator suspended it (its keys answer 403); null: active'),
    limits: z.object({
      requests_per_minute: z.number().int().nullable(),
      tokens_per_minute: z.number().int().nullable(),
      concurrent_jobs: z.number().int().nullable(),
    }),
    created_at: unixSeconds,
  })
  .meta({ id: 'Account' });
export const keyObject = z
  .object({
    id: z.string(),
    object: z.literal('api_key'),
    name: z.string().nullable(),
    status: z.enum(['active', 'disabled', 'expired']),
    created_at: unixSeconds,
    expires_at: nullableSeconds,
    last_used_at: nullableSeconds,
    disabled_at: nullableSeconds,
  })
  .meta({ id: 'ApiKey' });
export const createdKey = z.object({
  id: z.string(),
  key: z.string().describe('Shown only in this reply'),
  created_at: unixSeconds,
  expires_at: nullableSeconds,
});
export const getMeReply = z.object({
  account: z.object({ id: z.string(), name: z.string(), created_at: unixSeconds, mcp_enabled: z.boolean() }),
  key: z
    .object({ id: z.string(), created_at: unixSeconds })
    .nullable()
    .describe('null for an operator acting for the account (admin token with X-Switchyard-Account)'),
  balance: z.number().int(),
});

// The account's console (Switchyard extensions under /v2/organization)
export const accountKeyObject = keyObject
  .extend({
    current: z
      .boolean()
      .describe(
        'Whether this is the key the request was made with (always false for an operator acting with the admin token)',
      ),
  })
  .meta({ id: 'AccountApiKey' });
export const createdAccountKey = accountKeyObject
  .extend({ key: z.string().describe('The key itself: shown only in this reply') })
  .meta({ id: 'CreatedAccountApiKey' });

export const webhookSigningObject = z
  .object({
    object: z.literal('organization.webhook_signing'),
    enabled: z.boolean().describe("Whether the account's webhooks and callbacks are signed"),
    scheme: z.literal('standard-webhooks-v1'),
    secret_created_at: z.number().int().nullable().describe('When the current secret was made (Unix seconds)'),
    previous_secret_expires_at: z
      .number()
      .int()
      .nullable()
      .describe("Until when a rotation's previous secret still signs beside the current one; null: it does not"),
  })
  .meta({ id: 'WebhookSigning' });
export const createdWebhookSecret = webhookSigningObject
  .extend({
    secret: z
      .string()
      .describe('The signing secret, `whsec_` and base64 (Standard Webhooks): shown only in this reply, never again'),
  })
  .meta({ id: 'WebhookSigningWithSecret' });

const usageFigures = {
  amount: z.number().int().describe('kopecks debited'),
  transactions: z.number().int().describe('debits counted'),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
};
export const usageObject = z
  .object({
    object: z.literal('organization.usage'),
    from: unixSeconds,
    to: unixSeconds.describe('Unix time, seconds; included'),
    group_by: z.enum(['day', 'model', 'service']),
    currency: z.string(),
    data: z
      .array(
        z.object({
          key: z
            .string()
            .describe('A UTC day (`2026-11-25`), a model code (`none`: no model), or a service (`other`: none named)'),
          ...usageFigures,
        }),
      )
      .describe('Days in order, without the days of no spending; models and services by amount, most first'),
    total: z.object(usageFigures),
  })
  .meta({ id: 'OrganizationUsage' });

export const responseSummary = z
  .object({
    id: z.string(),
    object: z.literal('response.summary'),
    status: responseStatus,
    model: z.string(),
    vendor: z.string(),
    background: z.boolean(),
    conversation_id: z.string().nullable(),
    created_at: unixSeconds,
    started_at: nullableSeconds,
    completed_at: nullableSeconds,
    duration_ms: z.number().int().nullable().describe('completed_at − created_at, in milliseconds; null until it ends'),
    usage: storedUsage.nullable(),
    error: errorBody.nullable(),
    webhook: z
      .object({
        status: z.enum(['pending', 'delivered', 'failed', 'refused']),
        response_status: z.number().int().nullable(),
        error: z.string().nullable(),
        attempted_at: nullableSeconds,
      })
      .nullable()
      .describe(
        'The outcome of the one-shot webhook (metadata.webhook_url); null when none was asked for, or not yet sent',
      ),
  })
  .meta({ id: 'ResponseSummary' });

export const runSummary = z
  .object({
    id: z.string(),
    object: z.literal('thread.run.summary'),
    thread_id: z.string(),
    assistant_id: z.number().int(),
    status: runStatus,
    model: z.string(),
    created_at: unixSeconds,
    completed_at: nullableSeconds.describe(
      'When it ended, however it ended (completed, incomplete, failed, expired, cancelled); null while active',
    ),
    duration_ms: z.number().int().nullable(),
    usage: z
      .object({
        prompt_tokens: z.number().int(),
        completion_tokens: z.number().int(),
        total_tokens: z.number().int(),
        cost: z.number().describe('kopecks'),
      })
      .nullable(),
    last_error: errorBody.nullable(),
  })
  .meta({ id: 'RunSummary' });
