/**
 * The byte budget of what an MCP server sends: every reply (a JSON answer, an event stream) is counted as it
 * is read, and cut the moment it goes past the budget, so a server that answers a listing with a hundred
 * megabytes costs us the budget, not the hundred megabytes (nor the time to parse them).
 */
export class McpBudgetExceeded extends Error {
  override readonly name = 'McpBudgetExceeded';
}

/** Statuses whose reply has no body (a Response cannot be built with one). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * `fetch` whose replies stop at `maxBytes` each: the body errors with McpBudgetExceeded and `onExceeded` is told
 * (the session then fails its pending requests at once, instead of waiting for their timeout: the SDK reconnects
 * an event stream that broke off, and the answer it waits for never comes).
 */
export function budgetedFetch(
  fetch: (input: string | URL, init?: RequestInit) => Promise<Response>,
  maxBytes: number,
  onExceeded: (error: McpBudgetExceeded) => void,
) {
  return async (input: string | URL, init?: RequestInit): Promise<Response> => {
    // Cancelling a fetch body is not enough: undici goes on reading the rest of the reply (to reuse the
    // connection). Aborting the request closes the connection.
    const cut = new AbortController();
    const exceeded = (): McpBudgetExceeded => {
      const error = new McpBudgetExceeded(`the server's reply is larger than ${maxBytes} bytes`);
      cut.abort(error);
      onExceeded(error);
      return error;
    };
    const signal = init?.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal;
    const response = await fetch(input, { ...init, signal });
    if (!response.body || NULL_BODY_STATUSES.has(response.status)) return response;
    const declared = Number(response.headers.get('content-length') ?? NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      await response.body.cancel().catch(() => undefined);
      throw exceeded();
    }
    let seen = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) controller.error(exceeded());
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
