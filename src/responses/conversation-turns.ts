import {
  appendItems,
  deleteResponseItems,
  findConversation,
  firstItemSeq,
  type NewConversationItem,
} from '../conversations/conversations.repository';
import { transactionRetryingConflicts } from '../db/conflict-retry';
import type { Db } from '../db/database';
import { inputItemId, isFinalStatus, type OutputItem } from './response-types';
import type { ResponseRow } from './responses.table';

/**
 * A Response's turn in its conversation, as it happens (api-decisions 30): its input items are appended when it is
 * created (in the creation's transaction), its output items while it generates (a message `in_progress` from its
 * first text, every item before it with it, so the conversation keeps the output's order) and brought to their final
 * state when it ends, in the finalisation's transaction. A Response that fails or is cancelled keeps its input in
 * the conversation and loses its partial output there, as its own `output` is empty (api-decisions 15).
 *
 * Item ids are the Response's own (derived for the input, the output items' ids for the output), so a retried step
 * never appends anything twice.
 */

/** The Response's input items as conversation items. */
export function inputConversationItems(row: Pick<ResponseRow, 'id' | 'request'>): NewConversationItem[] {
  return row.request.input.map((item, index): NewConversationItem => {
    const id = inputItemId(row.id, index, item);
    if (item.type === 'message') return { type: 'message', role: item.role, content: item.content, id };
    if (item.type === 'function_call')
      return {
        type: 'function_call',
        callId: item.call_id,
        name: item.name,
        arguments: item.arguments,
        id,
        status: 'completed',
      };
    return { type: 'function_call_output', callId: item.call_id, output: item.output, id };
  });
}

/** The ids of the Response's input items in its conversation. */
export const inputConversationItemIds = (row: Pick<ResponseRow, 'id' | 'request'>) =>
  row.request.input.map((item, index) => inputItemId(row.id, index, item));

/**
 * Output items as conversation items. `live`: while the Response generates, a message in progress is stored
 * `in_progress` with no text yet (its text is on the Response's stream) and an MCP call not yet answered
 * `in_progress`; at the end (`final`) an MCP call cut off by a cancel or failure is stored `incomplete`.
 */
export function outputConversationItems(output: readonly OutputItem[], phase: 'live' | 'final'): NewConversationItem[] {
  return output.map((item): NewConversationItem => {
    switch (item.type) {
      case 'message':
        return {
          type: 'message',
          role: 'assistant',
          content: phase === 'live' && item.status === 'in_progress' ? [] : item.content,
          id: item.id,
          status: item.status,
        };
      case 'function_call':
        return {
          type: 'function_call',
          callId: item.call_id,
          name: item.name,
          arguments: item.arguments,
          id: item.id,
          status: 'completed',
        };
      case 'mcp_list_tools':
        return {
          type: 'mcp_list_tools',
          serverLabel: item.server_label,
          tools: item.tools,
          error: item.error,
          id: item.id,
        };
      case 'mcp_call':
        return {
          type: 'mcp_call',
          serverLabel: item.server_label,
          name: item.name,
          arguments: item.arguments,
          output: item.output,
          error: item.error,
          id: item.id,
          status: item.status !== 'in_progress' ? 'completed' : phase === 'live' ? 'in_progress' : 'incomplete',
        };
    }
  });
}

/** Appends a new Response's input to its conversation; call it in the creation's transaction. */
export async function appendTurnInput(trx: Db, row: ResponseRow): Promise<void> {
  await appendItems(trx, {
    conversationId: row.conversation_id!,
    accountId: row.account_id,
    items: inputConversationItems(row),
    responseId: row.id,
  });
}

/**
 * Where the Response's own items start in its conversation (its first input item's `seq`): its history is what
 * came before, so a later Response's input is not its context, nor its own input twice. Undefined when its input
 * is not there (a Response from before input was appended at creation, or its input items were deleted).
 */
export function turnStart(executor: Db, row: Pick<ResponseRow, 'id' | 'request' | 'conversation_id'>) {
  if (!row.conversation_id) return Promise.resolve(undefined);
  return firstItemSeq(executor, row.conversation_id, inputConversationItemIds(row));
}

/**
 * Brings the Response's items in its conversation to `output`: new items are appended (in output order), stored
 * ones take their new state. `live` while it generates: written only while the Response is still active (its row
 * is read FOR SHARE, so a finalisation either waited for this write or is seen, and wins). A conversation deleted
 * meanwhile gets nothing.
 */
export async function syncTurnOutput(
  trx: Db,
  row: ResponseRow,
  output: readonly OutputItem[],
  phase: 'live' | 'final',
): Promise<void> {
  if (phase === 'live') {
    const current = await trx
      .selectFrom('responses')
      .select('status')
      .where('id', '=', row.id)
      .forShare()
      .executeTakeFirst();
    if (!current || isFinalStatus(current.status)) return;
  }
  if (!(await findConversation(trx, row.account_id, row.conversation_id!))) return;
  // An older Response, whose input was not appended at its creation, appends it first.
  const input = row.request.input_in_conversation ? [] : inputConversationItems(row);
  await appendItems(trx, {
    conversationId: row.conversation_id!,
    accountId: row.account_id,
    items: [...input, ...outputConversationItems(output, phase)],
    responseId: row.id,
    update: true,
  });
}

/**
 * The end of a Response that failed or was cancelled, in its conversation: its input stays (an older Response
 * appends it now), whatever of its output was appended while it generated goes, as its `output` is empty.
 */
export async function dropTurnOutput(trx: Db, row: ResponseRow): Promise<void> {
  if (!(await findConversation(trx, row.account_id, row.conversation_id!))) return;
  if (!row.request.input_in_conversation) {
    await appendItems(trx, {
      conversationId: row.conversation_id!,
      accountId: row.account_id,
      items: inputConversationItems(row),
      responseId: row.id,
    });
  }
  await deleteResponseItems(trx, {
    conversationId: row.conversation_id!,
    responseId: row.id,
    keepIds: inputConversationItemIds(row),
    fromSeq: await turnStart(trx, row),
  });
}

/**
 * The live side of a generating Response's turn: `write(output)` brings the conversation to the output as it is
 * now (a message just started, a turn of an MCP loop just ended), one write at a time and only the newest state
 * when several wait. A failed write is reported and otherwise ignored: the finalisation writes the final state
 * whatever was written before, so the generation never waits for or fails by it. `settled()` before the step
 * that produced the output returns, so its finalisation comes after every write.
 */
export class LiveTurn {
  private running: Promise<void> | undefined;
  private waiting: OutputItem[] | undefined;

  constructor(
    private readonly db: Db,
    private readonly row: ResponseRow,
    private readonly onError: (error: unknown) => void,
  ) {}

  write(output: readonly OutputItem[]): void {
    // A copy: the assembler goes on changing its items (text, status) after this.
    this.waiting = structuredClone([...output]);
    this.running ??= this.drain();
  }

  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting) {
        const output = this.waiting;
        this.waiting = undefined;
        try {
          await transactionRetryingConflicts(this.db, (trx) => syncTurnOutput(trx, this.row, output, 'live'));
        } catch (error) {
          this.onError(error);
        }
      }
    } finally {
      this.running = undefined;
    }
  }
}
