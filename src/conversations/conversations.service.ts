import { inTransaction, type Db } from '../db/database';
import { toPageRequest, type Page, type PageQuery } from '../db/keyset-page';
import { invalidRequest, notFound } from '../errors';
import type { InputItem } from './conversations.schema';
import * as repository from './conversations.repository';
import type { NewConversationItem } from './conversations.repository';
import type { ConversationItemRow, ConversationRow } from './conversations.table';

/**
 * Conversations and their items for one account. Owns the transactions: a conversation and its initial
 * items are written together or not at all.
 */
export function createConversationsService(deps: { db: Db }) {
  const { db } = deps;

  async function create(
    accountId: string,
    input: { metadata?: Record<string, string>; items?: NewConversationItem[] },
  ): Promise<ConversationRow> {
    return inTransaction(db, async (trx) => {
      const conversation = await repository.insertConversation(trx, { accountId, metadata: input.metadata ?? {} });
      if (input.items?.length) {
        await repository.appendItems(trx, { conversationId: conversation.id, accountId, items: input.items });
      }
      return conversation;
    });
  }

  async function get(accountId: string, id: string): Promise<ConversationRow> {
    const conversation = await repository.findConversation(db, accountId, id);
    if (!conversation) throw conversationNotFound(id);
    return conversation;
  }

  async function update(accountId: string, id: string, metadata: Record<string, string>): Promise<ConversationRow> {
    const conversation = await repository.updateConversationMetadata(db, accountId, id, metadata);
    if (!conversation) throw conversationNotFound(id);
    return conversation;
  }

  async function remove(accountId: string, id: string): Promise<void> {
    if (!(await repository.deleteConversation(db, accountId, id))) throw conversationNotFound(id);
  }

  async function list(accountId: string, query: PageQuery): Promise<Page<ConversationRow>> {
    const cursorSeq = async (cursor: string) => {
      const seq = await repository.findConversationSeq(db, accountId, cursor);
      if (seq === undefined) throw unknownCursor(cursor, 'a conversation of this account');
      return seq;
    };
    return repository.listConversations(db, accountId, await toPageRequest(query, cursorSeq));
  }

  async function addItems(
    accountId: string,
    conversationId: string,
    items: NewConversationItem[],
  ): Promise<ConversationItemRow[]> {
    return inTransaction(db, (trx) => repository.appendItems(trx, { conversationId, accountId, items }));
  }

  async function listItems(
    accountId: string,
    conversationId: string,
    query: PageQuery,
  ): Promise<Page<ConversationItemRow>> {
    await get(accountId, conversationId);
    const cursorSeq = async (cursor: string) => {
      const seq = await repository.findItemSeq(db, conversationId, cursor);
      if (seq === undefined) throw unknownCursor(cursor, 'an item of this conversation');
      return seq;
    };
    return repository.listItems(db, conversationId, await toPageRequest(query, cursorSeq));
  }

  async function getItem(accountId: string, conversationId: string, itemId: string): Promise<ConversationItemRow> {
    await get(accountId, conversationId);
    const item = await repository.findItem(db, accountId, conversationId, itemId);
    if (!item) throw itemNotFound(itemId, conversationId);
    return item;
  }

  async function removeItem(accountId: string, conversationId: string, itemId: string): Promise<void> {
    await get(accountId, conversationId);
    if (!(await repository.deleteItem(db, accountId, conversationId, itemId)))
      throw itemNotFound(itemId, conversationId);
  }

  return { create, get, update, remove, list, addItems, listItems, getItem, removeItem };
}

export type ConversationsService = ReturnType<typeof createConversationsService>;

/** Wire items (snake_case) → the repository's item type. */
export function inputItemToNew(item: InputItem): NewConversationItem {
  switch (item.type) {
    case 'message':
      return { type: 'message', role: item.role, content: item.content };
    case 'function_call':
      return { type: 'function_call', callId: item.call_id, name: item.name, arguments: item.arguments };
    case 'function_call_output':
      return { type: 'function_call_output', callId: item.call_id, output: item.output };
  }
}

const conversationNotFound = (id: string) => notFound('conversation', `No conversation with id ${id}.`);
const itemNotFound = (itemId: string, conversationId: string) =>
  notFound('item', `No item with id ${itemId} in conversation ${conversationId}.`);
const unknownCursor = (cursor: string, what: string) =>
  invalidRequest('conversation', `The cursor ${cursor} is not the id of ${what}.`);
