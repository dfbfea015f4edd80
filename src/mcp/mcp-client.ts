import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { createGuardedFetch, OutboundAddressRefusedError } from '../outbound/address-guard';
import { budgetedFetch } from './mcp-budget';
import { mcpHeadersProblem } from './mcp-headers';
import type { McpServerSpec, McpToolDescription } from './mcp-types';

/** What one MCP tool call gave: its text (`output`) or why it failed (`error`). */
export type McpCallOutcome = { output: string; error: null } | { output: null; error: string };

export interface McpSession {
  listTools(signal: AbortSignal): Promise<McpToolDescription[]>;
  /** A tool's own failure, a timeout or a lost connection is an outcome with `error`; a session the server no longer knows throws McpSessionLost. */
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallOutcome>;
  /** Set once a request failed below the protocol (connection lost) or a call was cancelled: the session is not to be used again. */
  readonly broken: boolean;
  close(): Promise<void>;
}

/** The server answered 404 to the session: it did not run the request, so a new session may send it again. */
export class McpSessionLost extends Error {
  override readonly name = 'McpSessionLost';
}

export interface McpConnectOptions {
  allowPrivateNetworks: boolean;
  /** Bounds connecting, each request of the session, and a whole listing (all its pages). */
  timeoutMs: number;
  /** Bytes one reply of the server (an answer, an event stream) may have; more breaks the session. Default 4 MiB. */
  maxResponseBytes?: number;
  /** Bytes a listing's tools may have in all (names, descriptions, schemas as JSON): they go into every prompt. Default 1 MiB. */
  maxListingBytes?: number;
  signal: AbortSignal;
}

/** A tool's text beyond this many characters is cut (with a note): it enters the workflow history and the prompt. */
export const MAX_TOOL_OUTPUT_CHARS = 32 * 1024;
const MAX_LISTED_TOOLS = 128;
const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const DEFAULT_MAX_LISTING_BYTES = 1024 * 1024;

const CLIENT_INFO = { name: 'switchyard', version: '1.0.0' };

/**
 * A session with a remote MCP server through the official SDK: Streamable HTTP first, and the older
 * HTTP+SSE transport when the server does not speak it (the SDK's documented fallback: a 4xx to the
 * Streamable HTTP initialisation). Every connection goes through the SSRF guard's fetch (the address is
 * checked when the socket connects), with `authorization` as a Bearer token and the request's `headers`.
 * Nothing here logs or repeats those values: errors are reduced to their message with them removed.
 */
export async function connectMcpServer(server: McpServerSpec, options: McpConnectOptions): Promise<McpSession> {
  const url = new URL(server.server_url);
  // Checked when the Response was created; a request stored before the check existed is refused here.
  const headersProblem = mcpHeadersProblem(server.headers, 'headers');
  if (headersProblem)
    throw new McpConnectionError(`Could not connect to the MCP server "${server.server_label}": ${headersProblem}`);
  const maxListingBytes = options.maxListingBytes ?? DEFAULT_MAX_LISTING_BYTES;
  const headers: Record<string, string> = { ...(server.headers ?? {}) };
  const token = bearerToken(server.authorization);
  if (token) headers.Authorization = `Bearer ${token}`;
  const guardedFetch = createGuardedFetch({
    allowPrivateNetworks: options.allowPrivateNetworks,
    connectTimeoutMs: options.timeoutMs,
  });
  // A reply over the budget breaks the session and fails what waits on it at once.
  const overBudget = new AbortController();
  const fetch = budgetedFetch(guardedFetch, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, (error) => {
    broken = true;
    overBudget.abort(error);
  });
  const requestInit: RequestInit = { headers };
  const scrub = (error: unknown) => scrubbedMessage(error, server);

  let broken = false;
  const attempt = async (transport: Transport): Promise<Client> => {
    const client = new Client(CLIENT_INFO);
    try {
      await client.connect(transport, { signal: options.signal, timeout: options.timeoutMs });
      return client;
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
  };

  let client: Client;
  try {
    try {
      client = await attempt(new StreamableHTTPClientTransport(url, { fetch, requestInit }));
    } catch (error) {
      if (options.signal.aborted || !speaksOnlySse(error)) throw error;
      client = await attempt(new SSEClientTransport(url, { fetch, requestInit, eventSourceInit: { fetch } as never }));
    }
  } catch (error) {
    await guardedFetch.close().catch(() => undefined);
    throw new McpConnectionError(`Could not connect to the MCP server "${server.server_label}": ${scrub(error)}`);
  }

  /** A failure below the protocol breaks the session; a 404 to it means the server forgot it. */
  const transportFailure = (error: unknown) => {
    if (error instanceof McpError) return;
    broken = true;
    if (error instanceof StreamableHTTPError && error.code === 404) throw new McpSessionLost(scrub(error));
  };

  return {
    get broken() {
      return broken;
    },

    async listTools(signal) {
      const tools: McpToolDescription[] = [];
      const failed = (reason: string) =>
        new McpConnectionError(`Listing the tools of "${server.server_label}" failed: ${reason}`);
      // The pages of a listing share one deadline: a server cannot stretch it by paginating.
      const listing = AbortSignal.any([signal, overBudget.signal, AbortSignal.timeout(options.timeoutMs)]);
      let bytes = 0;
      let cursor: string | undefined;
      do {
        const page = await client
          .listTools(cursor ? { cursor } : undefined, { signal: listing, timeout: options.timeoutMs })
          .catch((error: unknown) => {
            if (signal.aborted) throw error;
            transportFailure(error);
            throw failed(overBudget.signal.aborted ? scrub(overBudget.signal.reason) : scrub(error));
          });
        for (const tool of page.tools) {
          const description = {
            name: tool.name,
            description: tool.description ?? null,
            input_schema: tool.inputSchema as Record<string, unknown>,
          };
          bytes += Buffer.byteLength(JSON.stringify(description));
          if (bytes > maxListingBytes) throw failed(`its tools are larger than ${maxListingBytes} bytes in all`);
          tools.push(description);
        }
        cursor = page.nextCursor;
      } while (cursor && tools.length < MAX_LISTED_TOOLS);
      return tools.slice(0, MAX_LISTED_TOOLS);
    },

    async callTool(name, args, signal) {
      try {
        const result = await client.callTool({ name, arguments: args }, undefined, {
          signal: AbortSignal.any([signal, overBudget.signal]),
          timeout: options.timeoutMs,
        });
        const text = resultText(result);
        return result.isError
          ? { output: null, error: text || 'The tool reported an error.' }
          : { output: text, error: null };
      } catch (error) {
        if (signal.aborted) {
          // The server may not honour the protocol's cancel notice (a stateless one cannot): closing the session
          // drops the request's connection, which every server notices.
          broken = true;
          throw error;
        }
        transportFailure(error);
        return { output: null, error: scrub(overBudget.signal.aborted ? overBudget.signal.reason : error) };
      }
    },

    async close() {
      await client.close().catch(() => undefined);
      await guardedFetch.close().catch(() => undefined);
    },
  };
}

/** A server that cannot be reached or refuses the session (not a tool's own failure). */
export class McpConnectionError extends Error {
  override readonly name = 'McpConnectionError';
}

/**
 * The Streamable HTTP attempt failed the way a server of the older HTTP+SSE transport fails it: its POST
 * to the endpoint was refused with 404 or 405 (or another 4xx the SDK reports with its code).
 */
function speaksOnlySse(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'number' && code >= 400 && code < 500 && code !== 401 && code !== 403) return true;
  return /\b(404|405)\b/.test(String((error as Error).message ?? ''));
}

/** The text of a tool result: its text parts joined; other parts (images, resources) as JSON. Cut at MAX_TOOL_OUTPUT_CHARS. */
function resultText(result: { content?: unknown; structuredContent?: unknown; toolResult?: unknown }): string {
  const parts = Array.isArray(result.content) ? (result.content as Array<{ type?: string; text?: string }>) : [];
  let text = parts
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part)))
    .join('\n');
  if (!text && result.structuredContent !== undefined) text = JSON.stringify(result.structuredContent);
  if (!text && result.toolResult !== undefined) text = JSON.stringify(result.toolResult);
  if (text.length > MAX_TOOL_OUTPUT_CHARS)
    text = `${text.slice(0, MAX_TOOL_OUTPUT_CHARS)}\n[output cut at ${MAX_TOOL_OUTPUT_CHARS} characters]`;
  return text;
}

/** An error's message with the request's secrets (token, header values) removed, on one line. */
/** `authorization` as given, with or without its `Bearer ` prefix (any case): the token alone, sent once prefixed. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const token = authorization?.replace(/^\s*bearer\s+/i, '').trim();
  return token ? token : undefined;
}

export function scrubbedMessage(error: unknown, server: Pick<McpServerSpec, 'authorization' | 'headers'>): string {
  let message = error instanceof Error ? error.message : String(error);
  // fetch reports every connection failure as "fetch failed": the cause says which (a refusal of the SSRF
  // guard, ECONNREFUSED, a TLS error).
  const refused = OutboundAddressRefusedError.find(error);
  if (refused) message = refused.message;
  else if (/fetch failed/.test(message)) {
    let cause: unknown = error;
    for (let depth = 0; depth < 8 && (cause as { cause?: unknown })?.cause; depth++)
      cause = (cause as { cause: unknown }).cause;
    if (cause !== error && cause instanceof Error) message = `${message} (${cause.message})`;
  }
  const secrets = [
    server.authorization,
    bearerToken(server.authorization),
    ...Object.values(server.headers ?? {}),
  ].filter((value): value is string => Boolean(value && value.length >= 4));
  for (const secret of secrets) message = message.split(secret).join('[redacted]');
  return message.replace(/\s+/g, ' ').trim().slice(0, 500) || 'unknown error';
}
