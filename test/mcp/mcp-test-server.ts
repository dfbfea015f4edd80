import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** A tool call as the test server saw it. */
export interface SeenCall {
  path: string;
  tool: string;
  args: Record<string, unknown>;
  authorization: string | undefined;
  tenant: string | undefined;
  /** Set when the client went away (or cancelled) before the tool finished. */
  aborted: boolean;
  /** Set when the tool finished. */
  finished: boolean;
}

export interface McpTestServer {
  /** `http://127.0.0.1:PORT`. Paths: `/mcp` (Streamable HTTP), `/secure/mcp` (Bearer TOKEN required), `/sse` (only the older HTTP+SSE transport), `/huge/mcp` (a hostile listing: 128 tools of 1 MiB each). */
  readonly url: string;
  readonly token: string;
  readonly calls: SeenCall[];
  /** Requests that listed tools, by path. */
  readonly listings: string[];

  /** Resolves once `count` calls of `tool` have started. */
  waitForCalls(tool: string, count: number): Promise<void>;
  /** Resolves once a call of `tool` was aborted. */
  waitForAbort(tool: string): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

/**
 * A real MCP server built with the official SDK, on loopback: tools `add` {a, b} → the sum, `whoami` → the
 * Authorization and X-Tenant headers it received, `slow` {ms} → waits (abortable), `fail` → an `isError`
 * result, `flood` {mb} → that many MiB of text, `explode` → throws, `shout` {text} → upper case. Stateless Streamable HTTP at `/mcp` and
 * `/secure/mcp` (401 without `Bearer <token>`), and the older HTTP+SSE transport alone at `/sse`.
 */
export async function startMcpTestServer(token = 'mcp-test-token-0123456789'): Promise<McpTestServer> {
  const calls: SeenCall[] = [];

  const listings: string[] = [];
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of [...listeners]) listener();
  };
  const until = (check: () => boolean) =>
    new Promise<void>((resolve) => {
      if (check()) return resolve();
      const listener = () => {
        if (!check()) return;
        listeners.delete(listener);
        resolve();
      };
      listeners.add(listener);
    });

  function buildServer(path: string, req: IncomingMessage): McpServer {
    const server = new McpServer({ name: 'switchyard-test', version: '1.0.0' });
    if (path === '/huge/mcp') {
      // A hostile listing: 128 tools with descriptions of HUGE_DESCRIPTION_CHARS each.
      const description = 'x'.repeat(HUGE_DESCRIPTION_CHARS);
      for (let index = 0; index < 128; index++)
        server.registerTool(`tool_${index}`, { description }, async () => ({ content: [] }));
      return server;
    }
    const seen = (tool: string, args: Record<string, unknown>): SeenCall => {
      const call: SeenCall = {
        path,
        tool,
        args,
        authorization: header(req, 'authorization'),
        tenant: header(req, 'x-tenant'),
        aborted: false,
        finished: false,
      };
      calls.push(call);
      notify();
      return call;
    };
    const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
    server.registerTool(
      'add',
      { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } },
      async (args) => {
        seen('add', args);
        return text(String(args.a + args.b));
      },
    );
    server.registerTool(
      'shout',
      { description: 'Upper-cases a text.', inputSchema: { text: z.string() } },
      async (args) => {
        seen('shout', args);
        return text(args.text.toUpperCase());
      },
    );
    server.registerTool('whoami', { description: 'Tells which credentials reached the server.' }, async () => {
      const call = seen('whoami', {});
      return text(JSON.stringify({ authorization: call.authorization ?? null, tenant: call.tenant ?? null }));
    });
    server.registerTool(
      'slow',
      { description: 'Waits ms milliseconds.', inputSchema: { ms: z.number() } },
      async (args, extra) => {
        const call = seen('slow', args);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, args.ms);
          const abort = () => {
            clearTimeout(timer);
            call.aborted = true;
            notify();
            resolve();
          };
          if (extra.signal.aborted) abort();
          extra.signal.addEventListener('abort', abort, { once: true });
          req.socket.once('close', abort);
        });
        call.finished = true;
        return text(`waited ${args.ms} ms`);
      },
    );
    server.registerTool(
      'flood',
      { description: 'Answers mb MiB of text.', inputSchema: { mb: z.number() } },
      async (args) => {
        seen('flood', args);
        return text('x'.repeat(args.mb * 1024 * 1024));
      },
    );
    server.registerTool('fail', { description: 'Always reports an error.' }, async () => {
      seen('fail', {});
      return { isError: true, content: [{ type: 'text' as const, text: 'the database is on fire' }] };
    });
    server.registerTool('explode', { description: 'Throws.' }, async () => {
      seen('explode', {});
      throw new Error('kaboom');
    });
    return server;
  }

  const sseTransports = new Map<string, SSEServerTransport>();
  const sockets = new Set<Socket>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    if (isListing(body)) {
      listings.push(url.pathname);
      notify();
    }
    if (url.pathname === '/mcp' || url.pathname === '/secure/mcp' || url.pathname === '/huge/mcp') {
      if (url.pathname === '/secure/mcp' && header(req, 'authorization') !== `Bearer ${token}`) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
        res.end(JSON.stringify({ error: 'unauthorized' }));
        return;
      }
      const server = buildServer(url.pathname, req);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    if (url.pathname === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sseTransports.set(transport.sessionId, transport);
      res.on('close', () => sseTransports.delete(transport.sessionId));
      await buildServer('/sse', req).connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const transport = sseTransports.get(url.searchParams.get('sessionId') ?? '');
      if (!transport) {
        res.writeHead(404).end();
        return;
      }
      await transport.handlePostMessage(req, res, body);
      return;
    }
    // `/sse` answers a Streamable HTTP POST as an old server does.
    res.writeHead(url.pathname === '/sse' ? 405 : 404, { 'content-type': 'text/plain' }).end('not here');
  }

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    token,
    calls,
    listings,
    waitForCalls: (tool, count) => until(() => calls.filter((call) => call.tool === tool).length >= count),
    waitForAbort: (tool) => until(() => calls.some((call) => call.tool === tool && call.aborted)),
    reset() {
      calls.length = 0;
      listings.length = 0;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Each tool's description at `/huge/mcp`: 128 of them make a 128 MiB listing (more than loopback's socket buffers hold). */
export const HUGE_DESCRIPTION_CHARS = 1024 * 1024;

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

function isListing(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((message) => (message as { method?: string } | undefined)?.method === 'tools/list');
}
