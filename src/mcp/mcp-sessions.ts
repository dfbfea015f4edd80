import { createHash } from 'node:crypto';
import { connectMcpServer, McpSessionLost, type McpSession } from './mcp-client';
import type { McpServerSpec } from './mcp-types';

export interface McpSessionPoolOptions {
  allowPrivateNetworks: boolean;
  /** Connecting, listing and each tool call. */
  toolTimeoutMs: number;
  /** Bytes of one reply of a server, and of one listing's tools (mcp-client.ts). */
  maxResponseBytes?: number;
  maxListingBytes?: number;
  /** A session unused this long is closed (default 10 s: a Response's next turn comes sooner). */
  idleMs?: number;
  /** Open sessions at most; the longest idle is closed to make room (default 256). */
  maxSessions?: number;
}

/**
 * Open MCP sessions kept for reuse within one Response: its listing, the rounds of its loop and the parallel
 * calls of a turn share one session per server instead of an initialise handshake and a new connection per
 * call, which cost more than the call itself on loopback (bench/README.md). Not shared across Responses:
 * a cancelled call closes its session (the only cancel every server notices), which must not cut off another
 * Response's calls. Sessions are keyed by the scope and a hash of the URL and credentials, closed when idle,
 * and dropped when their connection failed. The credentials live only in the open session.
 */
export interface McpSessionPool {
  /** Runs `fn` with the session of `scope` (a Response id) to `server`; a session the server no longer knows is replaced once. */
  use<T>(
    scope: string,
    server: McpServerSpec,
    signal: AbortSignal,
    fn: (session: McpSession) => Promise<T>,
  ): Promise<T>;
  /** Closes the sessions of `scope` (its Response ended); calls still running on them are not cut off. */
  release(scope: string): void;
  readonly size: number;
  close(): Promise<void>;
}

interface Entry {
  scope: string;
  session: Promise<McpSession>;
  inFlight: number;
  lastUsed: number;
}

export function createMcpSessionPool(options: McpSessionPoolOptions): McpSessionPool {
  const idleMs = options.idleMs ?? 10_000;
  const maxSessions = options.maxSessions ?? 256;
  const entries = new Map<string, Entry>();
  let closed = false;

  const sweeper = setInterval(
    () => {
      const now = Date.now();
      for (const [key, entry] of entries) if (entry.inFlight === 0 && now - entry.lastUsed > idleMs) drop(key, entry);
    },
    Math.max(1000, Math.min(idleMs, 10_000)),
  );
  sweeper.unref();

  function drop(key: string, entry: Entry) {
    if (entries.get(key) === entry) entries.delete(key);
    void entry.session.then(
      (session) => session.close(),
      () => undefined,
    );
  }

  function entryFor(scope: string, key: string, server: McpServerSpec, signal: AbortSignal): Entry {
    const existing = entries.get(key);
    if (existing) return existing;
    if (entries.size >= maxSessions) {
      const idle = [...entries]
        .filter(([, entry]) => entry.inFlight === 0)
        .sort((a, b) => a[1].lastUsed - b[1].lastUsed)[0];
      if (idle) drop(idle[0], idle[1]);
    }
    // The first caller's signal bounds only the connect; the session then serves whoever comes.
    const entry: Entry = {
      scope,
      session: connectMcpServer(server, {
        allowPrivateNetworks: options.allowPrivateNetworks,
        timeoutMs: options.toolTimeoutMs,
        maxResponseBytes: options.maxResponseBytes,
        maxListingBytes: options.maxListingBytes,
        signal,
      }),
      inFlight: 0,
      lastUsed: Date.now(),
    };
    entries.set(key, entry);
    entry.session.catch(() => {
      if (entries.get(key) === entry) entries.delete(key);
    });
    return entry;
  }

  async function attempt<T>(
    scope: string,
    key: string,
    server: McpServerSpec,
    signal: AbortSignal,
    fn: (session: McpSession) => Promise<T>,
  ): Promise<T> {
    const entry = entryFor(scope, key, server, signal);
    entry.inFlight += 1;
    try {
      const session = await entry.session;
      try {
        return await fn(session);
      } finally {
        if (session.broken) drop(key, entry);
      }
    } finally {
      entry.inFlight -= 1;
      entry.lastUsed = Date.now();
      if (closed) drop(key, entry);
    }
  }

  return {
    async use(scope, server, signal, fn) {
      if (closed) throw new Error('The MCP session pool is closed.');
      const key = sessionKey(scope, server);
      try {
        return await attempt(scope, key, server, signal, fn);
      } catch (error) {
        if (!(error instanceof McpSessionLost)) throw error;
        return attempt(scope, key, server, signal, fn);
      }
    },
    release(scope) {
      for (const [key, entry] of entries) if (entry.scope === scope && entry.inFlight === 0) drop(key, entry);
    },
    get size() {
      return entries.size;
    },
    async close() {
      closed = true;
      clearInterval(sweeper);
      const all = [...entries.values()];
      entries.clear();
      await Promise.all(
        all.map((entry) =>
          entry.session.then(
            (session) => session.close(),
            () => undefined,
          ),
        ),
      );
    },
  };
}

function sessionKey(scope: string, server: McpServerSpec): string {
  const headers = Object.entries(server.headers ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return createHash('sha256')
    .update(JSON.stringify([scope, server.server_url, server.authorization ?? null, headers]))
    .digest('hex');
}
