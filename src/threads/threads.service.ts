import { inTransaction, type Db } from '../db/database';
import { toPageRequest, type Page, type PageQuery } from '../db/keyset-page';
import { invalidRequest, notFound } from '../errors';
import * as repository from './threads.repository';
import type { NewThreadMessage } from './threads.repository';
import type { MessageInput } from './threads.schema';
import type { ThreadMessageRow, ThreadRow } from './threads.table';

export interface ThreadsServiceDeps {
  db: Db;
  /**
   * Called before a thread is deleted, once it is known to be the account's (the Runs slice cancels the
   * thread's active Run here, so the Run ends before its thread goes).
   */
  beforeDeleteThread?: (accountId: string, threadId: string) => Promise<void>;
}

/**
 * Threads and their messages for one account. Owns the transactions: a thread and its initial messages, and
 * each bulk operation, are written together or not at all.
 */
export function createThreadsService(deps: ThreadsServiceDeps) {
  const { db } = deps;

  async function create(
    accountId: string,
    input: { metadata?: Record<string, string>; messages?: NewThreadMessage[] },
  ): Promise<ThreadRow> {
    return inTransaction(db, async (trx) => {
      const thread = await repository.insertThread(trx, { accountId, metadata: input.metadata ?? {} });
      if (input.messages?.length)
        await repository.insertMessages(trx, { threadId: thread.id, accountId, messages: input.messages });
      return thread;
    });
  }

  async function get(accountId: string, threadId: string): Promise<ThreadRow> {
    const thread = await repository.findThread(db, accountId, threadId);
    if (!thread) throw threadNotFound(threadId);
    return thread;
  }

  async function update(accountId: string, threadId: string, metadata: Record<string, string>): Promise<ThreadRow> {
    const thread = await repository.updateThreadMetadata(db, accountId, threadId, metadata);
    if (!thread) throw threadNotFound(threadId);
    return thread;
  }

  async function remove(accountId: string, threadId: string): Promise<void> {
    await get(accountId, threadId);
    await deps.beforeDeleteThread?.(accountId, threadId);
    if (!(await repository.deleteThread(db, accountId, threadId))) throw threadNotFound(threadId);
  }

  /** One message or a bulk create: all stored, in order, or none. */
  async function addMessages(
    accountId: string,
    threadId: string,
    messages: NewThreadMessage[],
  ): Promise<ThreadMessageRow[]> {
    return inTransaction(db, (trx) => repository.insertMessages(trx, { threadId, accountId, messages }));
  }

  async function listMessages(accountId: string, threadId: string, query: PageQuery): Promise<Page<ThreadMessageRow>> {
    await get(accountId, threadId);
    const cursorSeq = async (cursor: string) => {
      const seq = await repository.findMessageSeq(db, threadId, cursor);
      if (seq === undefined)
        throw invalidRequest('message', `The cursor ${cursor} is not the id of a message of this thread.`);
      return seq;
    };
    return repository.listMessages(db, threadId, await toPageRequest(query, cursorSeq));
  }

  async function getMessage(accountId: string, threadId: string, messageId: string): Promise<ThreadMessageRow> {
    await get(accountId, threadId);
    const message = await repository.findMessage(db, accountId, threadId, messageId);
    if (!message) throw messageNotFound(messageId, threadId);
    return message;
  }

  async function updateMessage(
    accountId: string,
    threadId: string,
    messageId: string,
    metadata: Record<string, string>,
  ): Promise<ThreadMessageRow> {
    await get(accountId, threadId);
    const message = await repository.updateMessageMetadata(db, accountId, threadId, messageId, metadata);
    if (!message) throw messageNotFound(messageId, threadId);
    return message;
  }

  async function removeMessage(accountId: string, threadId: string, messageId: string): Promise<void> {
    await removeMessages(accountId, threadId, [messageId]);
  }

  /** Deletes every listed message of the thread, or (when one is not the thread's) none: 404 naming the missing. */
  async function removeMessages(accountId: string, threadId: string, messageIds: string[]): Promise<void> {
    await get(accountId, threadId);
    await inTransaction(db, async (trx) => {
      const deleted = new Set(await repository.deleteMessages(trx, { accountId, threadId, messageIds }));
      const missing = messageIds.filter((id) => !deleted.has(id));
      // Throwing rolls the deletes back.
      if (missing.length === 1) throw messageNotFound(missing[0], threadId);
      if (missing.length > 1)
        throw notFound('message', `No messages with ids ${missing.join(', ')} in thread ${threadId}.`);
    });
  }

  return {
    create,
    get,
    update,
    remove,
    addMessages,
    listMessages,
    getMessage,
    updateMessage,
    removeMessage,
    removeMessages,
  };
}

export type ThreadsService = ReturnType<typeof createThreadsService>;

/** A message as the client sent it → the repository's form: string content becomes one text part. */
export function messageInputToNew(message: MessageInput): NewThreadMessage {
  const content =
    typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : message.content;
  return { role: message.role, content, metadata: message.metadata };
}

const threadNotFound = (threadId: string) => notFound('thread', `No thread with id ${threadId}.`);
const messageNotFound = (messageId: string, threadId: string) =>
  notFound('message', `No message with id ${messageId} in thread ${threadId}.`);
