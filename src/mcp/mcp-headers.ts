import { invalidRequest } from '../errors';

/**
 * The `headers` a caller may give an MCP server: a few application headers (a tenant, an API key of the
 * server's own). Not the ones that frame or route the request: the client sets those itself, and a caller's
 * `Content-Length: 1` or `Transfer-Encoding` would mis-frame the request (it then hangs until its timeout),
 * `Host` would send it elsewhere than the checked URL, and hop-by-hop headers are about our connection, not
 * the caller's.
 */
export const MAX_MCP_HEADERS = 32;
/** Names and values together, as they would go on the wire. */
export const MAX_MCP_HEADER_BYTES = 8 * 1024;

const FORBIDDEN = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  // The client's own: the session and protocol it negotiated, and what it accepts.
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Visible characters, spaces and tabs: no CR or LF (header injection), no other control characters.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Why `headers` cannot be sent (one sentence naming `field`), or undefined when they can. */
export function mcpHeadersProblem(
  headers: Readonly<Record<string, string>> | undefined,
  field: string,
): string | undefined {
  if (!headers) return undefined;
  const entries = Object.entries(headers);
  if (entries.length > MAX_MCP_HEADERS)
    return `${field} has ${entries.length} headers; at most ${MAX_MCP_HEADERS} are allowed.`;
  let bytes = 0;
  for (const [name, value] of entries) {
    if (!TOKEN.test(name)) return `${field} has an invalid header name.`;
    const lower = name.toLowerCase();
    if (lower === 'authorization') return `${field} must not set Authorization; use authorization.`;
    if (FORBIDDEN.has(lower) || lower.startsWith('proxy-'))
      return `${field} must not set ${name}: the client sets the headers that frame and route its requests.`;
    if (!FIELD_VALUE.test(value))
      return `${field}.${name} has characters a header value cannot carry (line breaks, control characters).`;
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
  }
  if (bytes > MAX_MCP_HEADER_BYTES) return `${field} is ${bytes} bytes; at most ${MAX_MCP_HEADER_BYTES} are allowed.`;
  return undefined;
}

/** A 400 `mcp.invalid_request` for the first MCP tool of a request whose `headers` cannot be sent. */
export function refuseUnsendableMcpHeaders(
  tools: ReadonlyArray<{ type: string; headers?: Record<string, string> }> | undefined,
) {
  for (const [index, tool] of (tools ?? []).entries()) {
    if (tool.type !== 'mcp') continue;
    const problem = mcpHeadersProblem(tool.headers, `tools[${index}].headers`);
    if (problem) throw invalidRequest('mcp', problem);
  }
}
