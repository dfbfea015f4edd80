import { z } from 'zod';
import {
  adjustmentSchema,
  createAccountSchema,
  createKeySchema,
  creditSchema,
  listAccountsQuery,
  updateAccountSchema,
} from '../admin/admin.schema';
import { assistantBodySchema, listAssistantsQuerySchema } from '../assistants/assistants.schema';
import { speechBodySchema, transcriptionFieldsSchema } from '../audio/audio.schema';
import { modelFilterSchema, routeSchema, vendorFilterSchema } from '../catalog/catalog.schema';
import { legacyChatBodySchema, v1ChatBodySchema } from '../chat/chat.schema';
import {
  addItemsSchema,
  createConversationSchema,
  updateConversationSchema,
} from '../conversations/conversations.schema';
import { embeddingsBodySchema } from '../embeddings/embeddings.schema';
import { listQuerySchema } from '../http/lists';
import { openAISpeechBody, openAITranscriptionFields } from '../openai/openai-audio';
import { openAIChatBody } from '../openai/openai-chat';
import { SPEECH_FORMATS } from '../providers/provider';
import { openAIEmbeddingsBody } from '../openai/openai.routes';
import {
  createKeySchema as createAccountKeySchema,
  disableKeySchema,
  responsesQuerySchema,
  runsQuerySchema,
  transactionsQuerySchema,
  usageQuerySchema,
} from '../organization/organization.schema';
import { createResponseSchema, getResponseQuerySchema } from '../responses/responses.schema';
import {
  createRunSchema,
  createThreadAndRunSchema,
  submitToolOutputsSchema,
  updateRunSchema,
} from '../threads/runs.schema';
import {
  bulkCreateMessagesSchema,
  bulkDeleteMessagesSchema,
  createMessageSchema,
  createThreadSchema,
  updateMessageSchema,
  updateThreadSchema,
} from '../threads/threads.schema';
import { rotateWebhookSecretSchema } from '../webhooks/webhook-signing.schema';
import * as reply from './reply-schemas';

/**
 * Every route of the service as an OpenAPI operation: request schemas are the ones the route validates with
 * (imported, never copied), replies the documented wire shapes (reply-schemas.ts). test/openapi checks that this
 * list and the routers agree both ways.
 */
export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI template (`/v2/responses/{id}`). */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  /** `key`: API key (X-Auth-Token or Bearer); `admin`: admin token; `metrics`: admin or METRICS_TOKEN. */
  security: 'key' | 'admin' | 'metrics' | 'none';
  body?: z.ZodType;
  /** The body may be left out (every field optional, no body reads as `{}`). */
  bodyOptional?: boolean;
  /** `multipart`: form fields (`body`) plus a `file` part. */
  bodyType?: 'json' | 'multipart';
  query?: z.ZodType;
  reply?: z.ZodType;
  replyStatus?: 200 | 201;
  /** Other reply media: `text/event-stream` (with its event schema), audio, text. */
  alternatives?: Array<{ mediaType: string; schema?: z.ZodType; description: string }>;
  idempotencyKey?: boolean;
  /** Errors in OpenAI's body (under /openai/v1). */
  openAIErrors?: boolean;
  /** Error replies of its own beyond the usual ones, by status. */
  errors?: Partial<Record<'404' | '409', string>>;
}

const sse = (event: z.ZodType, description: string) => ({ mediaType: 'text/event-stream', schema: event, description });

function responsesOperations(prefix: string, tag: string, openAI: boolean): Operation[] {
  const common = { tag, security: 'key' as const, openAIErrors: openAI };
  const defaultNote = openAI
    ? 'Without `background` a Response is synchronous, as on OpenAI.'
    : "Without `background` a Response is queued (the spec's default).";
  return [
    {
      ...common,
      method: 'post',
      path: prefix,
      summary: 'Create a Response',
      description: `Background (queued, answered at once), synchronous (\`background: false\`, answered with the final Response) or streamed (\`stream: true\`). ${defaultNote}`,
      body: createResponseSchema,
      reply: reply.responseObject,
      alternatives: [sse(reply.streamEvent, 'With `stream: true`: the Response as events')],
      idempotencyKey: true,
    },
    {
      ...common,
      method: 'get',
      path: `${prefix}/{id}`,
      summary: 'Get a Response, or resume its event stream',
      query: getResponseQuerySchema,
      reply: reply.responseObject,
      alternatives: [
        sse(
          reply.streamEvent,
          'With `stream=true`: its events after `starting_after`, following a running one to its end',
        ),
      ],
    },
    {
      ...common,
      method: 'get',
      path: `${prefix}/{id}/input_items`,
      summary: 'List the input items of a Response (newest first)',
      query: listQuerySchema,
      reply: reply.listOf(reply.inputItemObject),
    },
    {
      ...common,
      method: 'post',
      path: `${prefix}/{id}/cancel`,
      summary: 'Cancel a background Response',
      reply: reply.responseObject,
    },
    {
      ...common,
      method: 'delete',
      path: `${prefix}/{id}`,
      summary: 'Delete a Response (cancelled first when running)',
      reply: reply.deleted('response.deleted'),
    },
  ];
}

function conversationsOperations(prefix: string, tag: string, openAI: boolean): Operation[] {
  const common = { tag, security: 'key' as const, openAIErrors: openAI };
  return [
    {
      ...common,
      method: 'post',
      path: prefix,
      summary: 'Create a conversation, with up to 20 items',
      body: createConversationSchema,
      reply: reply.conversationObject,
    },
    {
      ...common,
      method: 'get',
      path: prefix,
      summary: 'List conversations, newest first',
      query: listQuerySchema,
      reply: reply.listOf(reply.conversationObject),
    },
    {
      ...common,
      method: 'get',
      path: `${prefix}/{conversationId}`,
      summary: 'Get a conversation',
      reply: reply.conversationObject,
    },
    {
      ...common,
      method: 'post',
      path: `${prefix}/{conversationId}`,
      summary: "Replace a conversation's metadata",
      body: updateConversationSchema,
      reply: reply.conversationObject,
    },
    {
      ...common,
      method: 'delete',
      path: `${prefix}/{conversationId}`,
      summary: 'Delete a conversation and its items',
      reply: reply.deleted('conversation.deleted'),
    },
    {
      ...common,
      method: 'post',
      path: `${prefix}/{conversationId}/items`,
      summary: 'Add items',
      body: addItemsSchema,
      reply: reply.listOf(reply.conversationItem),
    },
    {
      ...common,
      method: 'get',
      path: `${prefix}/{conversationId}/items`,
      summary: 'List items',
      query: listQuerySchema,
      reply: reply.listOf(reply.conversationItem),
    },
    {
      ...common,
      method: 'get',
      path: `${prefix}/{conversationId}/items/{itemId}`,
      summary: 'Get an item',
      reply: reply.conversationItem,
    },
    {
      ...common,
      method: 'delete',
      path: `${prefix}/{conversationId}/items/{itemId}`,
      summary: 'Delete an item',
      reply: reply.deleted('conversation.item.deleted'),
    },
  ];
}

const key = { security: 'key' as const };

export const operations: Operation[] = [
  // Service
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/healthz',
    summary: 'Liveness',
    reply: z.object({ status: z.literal('ok') }),
  },
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/readyz',
    summary: 'Readiness (the database answers)',
    reply: z.object({ status: z.literal('ready') }),
  },
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    reply: z.record(z.string(), z.unknown()),
  },
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/docs',
    summary: 'The API reference page',
    alternatives: [{ mediaType: 'text/html', description: 'The reference, rendered from /openapi.json' }],
  },
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/docs/{file}',
    summary: "The reference page's scripts, styles and icon (from the installed swagger-ui-dist)",
    alternatives: [
      { mediaType: 'text/javascript', description: 'A script' },
      { mediaType: 'text/css', description: 'A style sheet' },
      { mediaType: 'image/png', description: 'The icon' },
    ],
  },
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/console',
    summary: 'The account console (a single-page app; sign in with an API key or the admin token)',
    alternatives: [{ mediaType: 'text/html', description: 'The page' }],
  },
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/console/{path}',
    summary: "The console's page at one of its views (/console/usage, /console/responses/{id}, …)",
    alternatives: [{ mediaType: 'text/html', description: 'The page' }],
  },
  {
    tag: 'Service',
    security: 'none',
    method: 'get',
    path: '/console/assets/{file}',
    summary: "The console's scripts and styles (content-hashed names, cached for a year)",
    alternatives: [
      { mediaType: 'text/javascript', description: 'A script' },
      { mediaType: 'text/css', description: 'A style sheet' },
    ],
  },
  {
    tag: 'Service',
    security: 'metrics',
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics',
    alternatives: [{ mediaType: 'text/plain; version=0.0.4', description: 'The Prometheus text format' }],
  },

  ...responsesOperations('/v2/responses', 'Responses', false),
  ...conversationsOperations('/v2/conversations', 'Conversations', false),

  // Catalog
  {
    ...key,
    tag: 'Catalog',
    method: 'get',
    path: '/v2/models',
    summary: 'Models, keyed by code',
    query: modelFilterSchema,
    reply: reply.modelsByCode,
  },
  {
    ...key,
    tag: 'Catalog',
    method: 'get',
    path: '/v2/models/prices',
    summary: 'Prices, keyed by model code',
    query: modelFilterSchema,
    reply: z.record(z.string(), reply.priceRecord),
  },
  { ...key, tag: 'Catalog', method: 'get', path: '/v2/models/{code}', summary: 'One model', reply: reply.modelRecord },
  {
    ...key,
    tag: 'Catalog',
    method: 'get',
    path: '/v2/vendors',
    summary: 'Vendors',
    query: vendorFilterSchema,
    reply: z.array(reply.vendorRecord),
  },
  {
    ...key,
    tag: 'Catalog',
    method: 'get',
    path: '/v2/vendors/{code}',
    summary: 'One vendor',
    reply: reply.vendorRecord,
  },
  {
    ...key,
    tag: 'Catalog',
    method: 'get',
    path: '/v2/vendors/{code}/models',
    summary: "A vendor's models, keyed by code",
    query: modelFilterSchema,
    reply: reply.modelsByCode,
  },

  // Organization
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/balance',
    summary: 'Balance and available balance (kopecks)',
    reply: reply.balanceObject,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/transactions',
    summary: 'Ledger transactions, newest first',
    description:
      '`service` and `model` keep the transactions whose metadata names exactly that service or model (Switchyard extension).',
    query: transactionsQuerySchema,
    reply: z.object({ transactions: z.array(reply.transactionObject) }),
  },
  // Organization: the account's console (Switchyard extensions)
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/usage',
    summary: 'Spending (debits) by UTC day, model or service',
    description:
      'Switchyard extension. `from` and `to` are Unix seconds, both included; defaults: `to` now, `from` 30 days before `to`. `from` must be before `to`, at most 366 days apart. `group_by` defaults to `day`. Credits are not counted.',
    query: usageQuerySchema,
    reply: reply.usageObject,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/keys',
    summary: "The account's API keys, newest first",
    description: 'Switchyard extension. Never the key text.',
    reply: reply.listOf(reply.accountKeyObject),
  },
  {
    ...key,
    tag: 'Organization',
    method: 'post',
    path: '/v2/organization/keys',
    summary: 'Issue an API key of the account (its text shown once)',
    description: 'Switchyard extension.',
    body: createAccountKeySchema,
    bodyOptional: true,
    reply: reply.createdAccountKey,
    replyStatus: 201,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'post',
    path: '/v2/organization/keys/{id}/disable',
    summary: 'Disable an API key of the account',
    description:
      "Switchyard extension. Disabling a disabled key changes nothing. The key the request is made with is disabled only with `confirm_self: true` (otherwise 400 `organization.self_disable`: the caller would lock itself out). Another account's key is not found (404).",
    body: disableKeySchema,
    bodyOptional: true,
    reply: reply.accountKeyObject,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/responses',
    summary: "The account's Responses, newest first (summaries)",
    description: 'Switchyard extension. Deleted Responses are left out. `after`: the last id of the previous page.',
    query: responsesQuerySchema,
    reply: reply.listOf(reply.responseSummary),
  },
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/responses/{id}',
    summary: 'One Response of the account (summary)',
    description: 'Switchyard extension.',
    reply: reply.responseSummary,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/runs',
    summary: "The account's Runs across its threads, newest first (summaries)",
    description: 'Switchyard extension. `after`: the last id of the previous page.',
    query: runsQuerySchema,
    reply: reply.listOf(reply.runSummary),
  },
  {
    ...key,
    tag: 'Organization',
    method: 'get',
    path: '/v2/organization/webhook-signing',
    summary: "Whether the account's webhooks are signed (Standard Webhooks)",
    description:
      'Switchyard extension (api-decisions 33). Never the secret. Webhooks and callbacks are unsigned, as the spec has them, until the account turns signing on.',
    reply: reply.webhookSigningObject,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'post',
    path: '/v2/organization/webhook-signing',
    summary: "Turn on Standard Webhooks signing of the account's webhooks (the secret shown once)",
    description:
      "Switchyard extension (api-decisions 33). From then on every webhook (a Response's `metadata.webhook_url`) and asynchronous transcription callback of the account carries `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret), which any Standard Webhooks library verifies with the `whsec_…` secret of this reply. The secret is in this reply only; when signing is on already it is 400 `organization.webhook_signing_enabled` (rotate to get a new secret). No Idempotency-Key: no copy of the reply is kept.",
    reply: reply.createdWebhookSecret,
    replyStatus: 201,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'post',
    path: '/v2/organization/webhook-signing/rotate',
    summary: 'A new webhook signing secret (shown once)',
    description:
      'Switchyard extension (api-decisions 33). The replaced secret stops signing at once, or with `keep_previous_seconds` (at most 86400) signs beside the new one for that long: each webhook then carries two signatures, and a receiver holding either secret verifies it. 400 `organization.webhook_signing_disabled` when signing is off.',
    body: rotateWebhookSecretSchema,
    bodyOptional: true,
    reply: reply.createdWebhookSecret,
  },
  {
    ...key,
    tag: 'Organization',
    method: 'delete',
    path: '/v2/organization/webhook-signing',
    summary: 'Turn webhook signing off (the secrets are deleted)',
    description: 'Switchyard extension (api-decisions 33). Webhooks are unsigned again from the next one on.',
    reply: reply.webhookSigningObject,
  },

  // Embeddings, chat, audio
  {
    ...key,
    tag: 'Embeddings',
    method: 'post',
    path: '/v2/embeddings',
    summary: 'Embed a text',
    body: embeddingsBodySchema,
    reply: reply.embeddingObject,
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'Chat (legacy)',
    method: 'post',
    path: '/v2/chat/completions',
    summary: 'A chat completion (legacy shape)',
    body: legacyChatBodySchema,
    reply: reply.legacyChatCompletion,
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'Audio',
    method: 'post',
    path: '/v2/audio/speech',
    summary: 'Synthesize speech',
    body: speechBodySchema,
    alternatives: [
      {
        mediaType: 'audio/mpeg',
        description: 'The MP3, streamed as the vendor produces it (whole, with an Idempotency-Key)',
      },
    ],
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'Audio',
    method: 'post',
    path: '/v2/audio/transcription',
    summary: 'Transcribe audio (synchronous, or queued for an asynchronous model)',
    body: transcriptionFieldsSchema,
    bodyType: 'multipart',
    reply: z.union([reply.transcriptionReply, reply.transcriptionSubmitted]),
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'Audio',
    method: 'get',
    path: '/v2/audio/transcription/check/{id}',
    summary: 'Status of a queued transcription',
    reply: reply.transcriptionSubmitted,
  },
  {
    ...key,
    tag: 'Audio',
    method: 'get',
    path: '/v2/audio/transcription/result/{id}',
    summary: 'Result of a completed transcription',
    reply: reply.transcriptionReply,
  },

  // Assistants
  {
    ...key,
    tag: 'Assistants',
    method: 'post',
    path: '/v2/assistants',
    summary: 'Create an assistant',
    body: assistantBodySchema,
    reply: reply.assistantObject,
  },
  {
    ...key,
    tag: 'Assistants',
    method: 'get',
    path: '/v2/assistants',
    summary: 'List assistants',
    query: listAssistantsQuerySchema,
    reply: z.array(reply.assistantListEntry),
  },
  {
    ...key,
    tag: 'Assistants',
    method: 'get',
    path: '/v2/assistants/{assistantId}',
    summary: 'Get an assistant',
    reply: reply.assistantObject,
  },
  {
    ...key,
    tag: 'Assistants',
    method: 'post',
    path: '/v2/assistants/{assistantId}',
    summary: 'Replace an assistant',
    body: assistantBodySchema,
    reply: reply.assistantObject,
  },
  {
    ...key,
    tag: 'Assistants',
    method: 'delete',
    path: '/v2/assistants/{assistantId}',
    summary: 'Delete an assistant',
    reply: z.object({ id: z.number().int(), deleted: z.literal(true) }),
  },

  // Threads, messages, runs
  {
    ...key,
    tag: 'Threads',
    method: 'post',
    path: '/v2/threads',
    summary: 'Create a thread',
    body: createThreadSchema,
    reply: reply.threadObject,
  },
  {
    ...key,
    tag: 'Threads',
    method: 'get',
    path: '/v2/threads/{threadId}',
    summary: 'Get a thread',
    reply: reply.threadObject,
  },
  {
    ...key,
    tag: 'Threads',
    method: 'post',
    path: '/v2/threads/{threadId}',
    summary: "Replace a thread's metadata",
    body: updateThreadSchema,
    reply: reply.threadObject,
  },
  {
    ...key,
    tag: 'Threads',
    method: 'delete',
    path: '/v2/threads/{threadId}',
    summary: 'Delete a thread (its active Run is cancelled first)',
    reply: reply.deleted('thread.deleted'),
  },
  {
    ...key,
    tag: 'Threads',
    method: 'post',
    path: '/v2/threads/{threadId}/messages',
    summary: 'Add a message',
    body: createMessageSchema,
    reply: reply.threadMessage,
  },
  {
    ...key,
    tag: 'Threads',
    method: 'get',
    path: '/v2/threads/{threadId}/messages',
    summary: 'List messages',
    query: listQuerySchema,
    reply: reply.listOf(reply.threadMessage),
  },
  {
    ...key,
    tag: 'Threads',
    method: 'post',
    path: '/v2/threads/{threadId}/messages/bulk-create',
    summary: 'Add several messages',
    body: bulkCreateMessagesSchema,
    reply: reply.listOf(reply.threadMessage),
  },
  {
    ...key,
    tag: 'Threads',
    method: 'delete',
    path: '/v2/threads/{threadId}/messages/bulk-delete',
    summary: 'Delete several messages',
    body: bulkDeleteMessagesSchema,
    reply: z.object({ object: z.literal('list'), data: z.array(reply.deleted('thread.message.deleted')) }),
  },
  {
    ...key,
    tag: 'Threads',
    method: 'get',
    path: '/v2/threads/{threadId}/messages/{messageId}',
    summary: 'Get a message',
    reply: reply.threadMessage,
  },
  {
    ...key,
    tag: 'Threads',
    method: 'post',
    path: '/v2/threads/{threadId}/messages/{messageId}',
    summary: "Replace a message's metadata",
    body: updateMessageSchema,
    reply: reply.threadMessage,
  },
  {
    ...key,
    tag: 'Threads',
    method: 'delete',
    path: '/v2/threads/{threadId}/messages/{messageId}',
    summary: 'Delete a message',
    reply: reply.deleted('thread.message.deleted'),
  },
  {
    ...key,
    tag: 'Runs',
    method: 'post',
    path: '/v2/threads/runs',
    summary: 'Create a thread and run it',
    body: createThreadAndRunSchema,
    reply: reply.runObject,
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'Runs',
    method: 'post',
    path: '/v2/threads/{threadId}/runs',
    summary: 'Run a thread',
    body: createRunSchema,
    reply: reply.runObject,
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'Runs',
    method: 'get',
    path: '/v2/threads/{threadId}/runs',
    summary: 'List Runs',
    query: listQuerySchema,
    reply: reply.listOf(reply.runObject),
  },
  {
    ...key,
    tag: 'Runs',
    method: 'get',
    path: '/v2/threads/{threadId}/runs/{runId}',
    summary: 'Get a Run',
    reply: reply.runObject,
  },
  {
    ...key,
    tag: 'Runs',
    method: 'post',
    path: '/v2/threads/{threadId}/runs/{runId}',
    summary: "Replace a Run's metadata",
    body: updateRunSchema,
    reply: reply.runObject,
  },
  {
    ...key,
    tag: 'Runs',
    method: 'post',
    path: '/v2/threads/{threadId}/runs/{runId}/cancel',
    summary: 'Cancel a Run',
    reply: reply.runObject,
  },
  {
    ...key,
    tag: 'Runs',
    method: 'post',
    path: '/v2/threads/{threadId}/runs/{runId}/submit_tool_outputs',
    summary: 'Submit tool outputs',
    body: submitToolOutputsSchema,
    reply: reply.runObject,
  },

  // v1
  {
    ...key,
    tag: 'v1',
    method: 'get',
    path: '/v1/models',
    summary: 'Models (v1)',
    reply: z.object({ object: z.literal('list'), data: z.array(reply.modelRecord) }),
  },
  { ...key, tag: 'v1', method: 'get', path: '/v1/models/{code}', summary: 'One model (v1)', reply: reply.modelRecord },
  {
    ...key,
    tag: 'v1',
    method: 'get',
    path: '/v1/vendors',
    summary: 'Vendors (v1)',
    reply: z.array(reply.vendorRecord),
  },
  {
    ...key,
    tag: 'v1',
    method: 'get',
    path: '/v1/vendors/{code}',
    summary: 'One vendor (v1)',
    reply: reply.vendorRecord,
  },
  {
    ...key,
    tag: 'v1',
    method: 'get',
    path: '/v1/getMe',
    summary: 'The calling account and key',
    reply: reply.getMeReply,
  },
  {
    ...key,
    tag: 'v1',
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'A chat completion (v1 shape)',
    body: v1ChatBodySchema,
    reply: reply.v1ChatReply,
    idempotencyKey: true,
  },

  // OpenAI-compatible surface
  {
    ...key,
    tag: 'OpenAI-compatible',
    openAIErrors: true,
    method: 'get',
    path: '/openai/v1/models',
    summary: 'Models (OpenAI shape)',
    reply: reply.openAIModelList,
  },
  {
    ...key,
    tag: 'OpenAI-compatible',
    openAIErrors: true,
    method: 'get',
    path: '/openai/v1/models/{id}',
    summary: 'One model (OpenAI shape)',
    reply: reply.openAIModel,
  },
  {
    ...key,
    tag: 'OpenAI-compatible',
    openAIErrors: true,
    method: 'post',
    path: '/openai/v1/embeddings',
    summary: 'Embeddings (OpenAI shape)',
    body: openAIEmbeddingsBody,
    reply: reply.openAIEmbeddings,
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'OpenAI-compatible',
    openAIErrors: true,
    method: 'post',
    path: '/openai/v1/chat/completions',
    summary: 'Chat completions (OpenAI shape)',
    body: openAIChatBody,
    reply: reply.openAIChatCompletion,
    idempotencyKey: true,
    alternatives: [sse(reply.openAIChatChunk, 'With `stream: true`: `data:` chunks, then `data: [DONE]`')],
  },
  {
    ...key,
    tag: 'OpenAI-compatible',
    openAIErrors: true,
    method: 'post',
    path: '/openai/v1/audio/speech',
    summary: 'Synthesize speech (OpenAI shape)',
    body: openAISpeechBody,
    alternatives: Object.entries(SPEECH_FORMATS).map(([format, mediaType]) => ({
      mediaType,
      description: `response_format ${format}`,
    })),
    idempotencyKey: true,
  },
  {
    ...key,
    tag: 'OpenAI-compatible',
    openAIErrors: true,
    method: 'post',
    path: '/openai/v1/audio/transcriptions',
    summary: 'Transcribe audio (OpenAI shape; synchronous models)',
    body: openAITranscriptionFields,
    bodyType: 'multipart',
    reply: z.union([reply.openAITranscription, reply.openAITranscriptionVerbose]),
    alternatives: [
      { mediaType: 'text/plain', description: 'response_format text or srt' },
      { mediaType: 'text/vtt', description: 'response_format vtt' },
    ],
    idempotencyKey: true,
  },
  ...responsesOperations('/openai/v1/responses', 'OpenAI-compatible', true),
  ...conversationsOperations('/openai/v1/conversations', 'OpenAI-compatible', true),

  // Admin
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/accounts',
    summary: 'Create an account',
    body: createAccountSchema,
    reply: reply.accountObject,
    replyStatus: 201,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'get',
    path: '/admin/accounts',
    summary: 'List accounts (newest first, by part of the name)',
    query: listAccountsQuery,
    reply: reply.listOf(reply.accountObject),
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'get',
    path: '/admin/accounts/{id}',
    summary: 'One account with its keys',
    reply: reply.accountObject.extend({ keys: z.array(reply.keyObject) }),
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'patch',
    path: '/admin/accounts/{id}',
    summary: 'Rename, MCP flag, limits',
    body: updateAccountSchema,
    reply: reply.accountObject,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/accounts/{id}/credits',
    summary: 'Credit an account',
    body: creditSchema,
    reply: reply.transactionObject,
    replyStatus: 201,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'get',
    path: '/admin/accounts/{id}/keys',
    summary: "An account's keys",
    reply: reply.listOf(reply.keyObject),
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/accounts/{id}/keys',
    summary: 'Issue an API key (shown once)',
    body: createKeySchema,
    reply: reply.createdKey,
    replyStatus: 201,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/keys/{id}/disable',
    summary: 'Disable a key',
    reply: z.object({ id: z.string(), status: z.enum(['active', 'disabled']) }),
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/keys/{id}/enable',
    summary: 'Re-enable a disabled key',
    reply: z.object({ id: z.string(), status: z.enum(['active', 'disabled']) }),
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/accounts/{id}/adjustments',
    summary:
      'Debit or refund an account with a reason, idempotent by its key (the same key again: the first transaction, with Idempotent-Replayed: true)',
    body: adjustmentSchema,
    reply: reply.transactionObject,
    replyStatus: 201,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/accounts/{id}/suspend',
    summary: 'Suspend an account: its keys answer 403',
    reply: reply.accountObject,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/accounts/{id}/reactivate',
    summary: 'Reactivate a suspended account',
    reply: reply.accountObject,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'get',
    path: '/admin/accounts/{id}/usage',
    summary: "An account's debits by day, model or service",
    query: usageQuerySchema,
    reply: reply.usageObject,
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'get',
    path: '/admin/routes',
    summary: "The catalog's routes: the file's, then those created through the admin API (api-decisions 34)",
    reply: z.object({ object: z.literal('list'), data: z.array(reply.routeRecord) }),
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'get',
    path: '/admin/routes/{code}',
    summary: 'One route',
    reply: reply.routeRecord,
    errors: { '404': 'No route of that code' },
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'post',
    path: '/admin/routes',
    summary: 'Create a route, served by every process at once (validated as the catalog file is)',
    body: routeSchema,
    reply: reply.routeRecord,
    replyStatus: 201,
    errors: { '409': 'A route of that code exists (admin.conflict)' },
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'put',
    path: '/admin/routes/{code}',
    summary: "Replace a route created through the admin API (the code is the path's)",
    body: routeSchema,
    reply: reply.routeRecord,
    errors: { '404': 'No route of that code', '409': "The route is the catalog file's: change it there" },
  },
  {
    tag: 'Admin',
    security: 'admin',
    method: 'delete',
    path: '/admin/routes/{code}',
    summary: 'Delete a route created through the admin API (not one another route names as a target)',
    reply: z.object({ object: z.literal('route.deleted'), code: z.string(), deleted: z.literal(true) }),
    errors: { '404': 'No route of that code', '409': "The route is the catalog file's: change it there" },
  },
];
