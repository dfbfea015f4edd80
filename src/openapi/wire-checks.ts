import type { z } from 'zod';
import type { accountToWire, keyToWire } from '../accounts/accounts.wire';
import type { assistantToWire } from '../assistants/assistants.wire';
import type { transactionToWire } from '../billing/ledger.wire';
import type { adminRouteToWire, ModelWire, VendorWire } from '../catalog/catalog.wire';
import type { legacyCompletionToWire } from '../chat/chat.wire';
import type { conversationToWire, itemToWire } from '../conversations/conversations.wire';
import type { chatCompletionToOpenAI } from '../openai/openai-chat';
import type { AccountKeyWire, ResponseSummaryWire, RunSummaryWire, UsageWire } from '../organization/organization.wire';
import type { inputItemToWire, ResponseWire } from '../responses/responses.wire';
import type { RunWire } from '../threads/runs.wire';
import type { ThreadMessageWire, ThreadWire } from '../threads/threads.wire';
import type { webhookSigningToWire } from '../webhooks/webhook-signing.wire';
import type * as reply from './reply-schemas';

/**
 * Compile-time checks that what each mapper builds is what the document says (reply-schemas.ts): each function
 * type-checks only if the mapper's reply is assignable to the documented shape. Nothing here runs.
 */
type Documented<Schema extends z.ZodType> = z.output<Schema>;
export const wireChecks = {
  response: (wire: ResponseWire): Documented<typeof reply.responseObject> => wire,
  inputItem: (wire: ReturnType<typeof inputItemToWire>): Documented<typeof reply.inputItemObject> => wire,
  conversation: (wire: ReturnType<typeof conversationToWire>): Documented<typeof reply.conversationObject> => wire,
  conversationItem: (wire: ReturnType<typeof itemToWire>): Documented<typeof reply.conversationItem> => wire,
  transaction: (wire: ReturnType<typeof transactionToWire>): Documented<typeof reply.transactionObject> => wire,
  model: (wire: ModelWire): Documented<typeof reply.modelRecord> => wire,
  vendor: (wire: VendorWire): Documented<typeof reply.vendorRecord> => wire,
  route: (wire: ReturnType<typeof adminRouteToWire>): Documented<typeof reply.routeRecord> => wire,
  legacyChat: (wire: ReturnType<typeof legacyCompletionToWire>): Documented<typeof reply.legacyChatCompletion> => wire,
  openAIChat: (wire: ReturnType<typeof chatCompletionToOpenAI>): Documented<typeof reply.openAIChatCompletion> => wire,
  assistant: (wire: ReturnType<typeof assistantToWire>): Documented<typeof reply.assistantObject> => wire,
  thread: (wire: ThreadWire): Documented<typeof reply.threadObject> => wire,
  message: (wire: ThreadMessageWire): Documented<typeof reply.threadMessage> => wire,
  run: (wire: RunWire): Documented<typeof reply.runObject> => wire,
  account: (wire: ReturnType<typeof accountToWire>): Documented<typeof reply.accountObject> => wire,
  key: (wire: ReturnType<typeof keyToWire>): Documented<typeof reply.keyObject> => wire,
  accountKey: (wire: AccountKeyWire): Documented<typeof reply.accountKeyObject> => wire,
  usage: (wire: UsageWire): Documented<typeof reply.usageObject> => wire,
  responseSummary: (wire: ResponseSummaryWire): Documented<typeof reply.responseSummary> => wire,
  runSummary: (wire: RunSummaryWire): Documented<typeof reply.runSummary> => wire,
  webhookSigning: (wire: ReturnType<typeof webhookSigningToWire>): Documented<typeof reply.webhookSigningObject> =>
    wire,
};
