import type { ResponseRequest } from '../../src/responses/response-types';
import type { ApiReply, TestApp } from '../support/harness';
import { isTerminal, SseStream, type SseEvent } from '../support/sse';

/** Shared steps of the Responses suites: create, stream, resume, wait for the end, read rows. */

export const MODEL = 'dev-echo';

/** A stored request as the service would write it for `input: text`, for tests that insert Response rows directly. */
export function storedRequest(text: string, overrides: Partial<ResponseRequest> = {}): ResponseRequest {
  return {
    input: [{ type: 'message', role: 'user', content: text }],
    instructions: null,
    temperature: null,
    top_p: null,
    reasoning_effort: null,
    verbosity: null,
    parallel_tool_calls: true,
    message_limit: null,
    truncation: 'disabled',
    tools: [],
    tool_choice: null,
    max_output_tokens: null,
    stream: false,
    ...overrides,
  };
}

export function createResponse(
  app: TestApp,
  key: string,
  body: Record<string, unknown>,
  headers?: Record<string, string>,
): Promise<ApiReply> {
  return app.request('POST', '/v2/responses', { key, body: { model: MODEL, ...body }, headers });
}

/** POST /v2/responses with stream: true, background: false. */
export function openCreateStream(
  app: TestApp,
  key: string,
  body: Record<string, unknown>,
  headers?: Record<string, string>,
): Promise<SseStream> {
  return SseStream.open(`${app.baseUrl}/v2/responses`, {
    key,
    body: { model: MODEL, background: false, stream: true, ...body },
    headers,
  });
}

/** GET /v2/responses/{id}?stream=true[&starting_after=N]. */
export function openResumeStream(app: TestApp, key: string, id: string, startingAfter?: number): Promise<SseStream> {
  const query = startingAfter === undefined ? '' : `&starting_after=${startingAfter}`;
  return SseStream.open(`${app.baseUrl}/v2/responses/${id}?stream=true${query}`, { key });
}

/** Follows the Response's event stream to its terminal event; returns the stored Response after it. */
export async function waitForFinal(app: TestApp, key: string, id: string): Promise<any> {
  const stream = await openResumeStream(app, key, id);
  if (stream.status !== 200)
    throw new Error(`resume stream answered ${stream.status}: ${JSON.stringify(stream.errorBody)}`);
  const events = await stream.readAll();
  const last = events.at(-1);
  if (!last || !isTerminal(last)) throw new Error(`the stream of ${id} ended without a terminal event`);
  const reply = await app.request('GET', `/v2/responses/${id}`, { key });
  return reply.body;
}

/** Reads a stream until the Response has started generating text (its first delta). */
export async function readUntilFirstDelta(stream: SseStream): Promise<SseEvent[]> {
  const events = await stream.readUntil((event) => event.event === 'response.output_text.delta');
  if (events.at(-1)?.event !== 'response.output_text.delta') throw new Error('the stream ended before any text');
  return events;
}

/** The text of the first message item of an output array. */
export function outputText(response: { output: any[] }): string {
  const message = response.output.find((item) => item.type === 'message');
  return message ? message.content.map((part: { text: string }) => part.text).join('') : '';
}

/** `w1 w2 ... wN`, what dev-echo's `/words N` replies. */
export const wordList = (count: number) => Array.from({ length: count }, (_, index) => `w${index + 1}`).join(' ');

/**
 * Polls `read` until `accept` holds, for conditions that have no event to wait on (e.g. a job row's
 * final state). Bounded: fails after `timeoutMs`.
 */
export async function pollUntil<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not reached within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Ledger debits that bill one Response. */
export function debitsOf(app: TestApp, accountId: string) {
  return app.db
    .selectFrom('ledger_transactions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('type', '=', 'debit')
    .orderBy('created_at')
    .execute();
}

export async function balanceOf(app: TestApp, key: string): Promise<number> {
  const reply = await app.request('GET', '/v2/organization/balance', { key });
  return reply.body.balance;
}

/** A Response's usage when nothing was used: with the token details OpenAI's reference requires (always 0 here). */
export const ZERO_USAGE = {
  input_tokens: 0,
  output_tokens: 0,
  total_tokens: 0,
  cost: 0,
  input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
  output_tokens_details: { reasoning_tokens: 0 },
};
