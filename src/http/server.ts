import http from 'node:http';
import type { Socket } from 'node:net';
import type Koa from 'koa';
import type { Config } from '../config';
import { ApiError } from '../errors';
import type { Metrics } from '../metrics/metrics';
import { errorReply } from './error-middleware';

export type ConnectionLimits = Pick<
  Config['http'],
  | 'headersTimeoutMs'
  | 'requestTimeoutMs'
  | 'keepAliveTimeoutMs'
  | 'idleTimeoutMs'
  | 'maxConnections'
  | 'bodyGraceMs'
  | 'bodyMinBytesPerSecond'
  | 'sendTimeoutMs'
  | 'maxUnsentBytes'
>;

/** Why the server closed a connection itself (the `reason` of switchyard_http_connections_closed_total). */
export type ConnectionCut = 'idle' | 'evicted' | 'slow_body' | 'stalled_reply' | 'unsent_budget';

/** What each open connection is doing: waiting for a request, receiving one's body, or being answered. */
interface Tracked {
  phase: 'idle' | 'receiving' | 'serving';
  /** When the phase began (ms). */
  since: number;
  request?: http.IncomingMessage;
  response?: http.ServerResponse;
  /** socket.bytesRead when the request's headers had arrived: what comes after is its body. */
  readAtRequest: number;
  /** How far the kernel had taken our writes at the last look, and since when it took none while some waited. */
  sent: number;
  stalledSince?: number;
}

/**
 * The HTTP server of the app, with every connection bounded in time and memory, whatever the peer does:
 *
 * - a connection with no request in flight is closed after `idleTimeoutMs`;
 * - a request body must keep arriving at `bodyMinBytesPerSecond` once `bodyGraceMs` has passed (credit for
 *   bytes sent early carries over, so a body of n bytes has grace + n / rate to arrive): a trickle is answered
 *   408 and its connection closed, where Node alone would wait for its 300 s request timeout;
 * - a reply the peer does not read (no byte taken by the kernel for `sendTimeoutMs` while some wait) is given up
 *   and its connection closed, and when replies waiting to be sent add up to more than `maxUnsentBytes`, the
 *   stalled ones holding the most are closed first: a crowd of clients that never read cannot make the process
 *   hold their pages in memory;
 * - at `maxConnections` a new connection takes the place of the longest-idle one, else of the one that has been
 *   receiving its body the longest, else of a stalled reply; it is refused only when every connection is being
 *   answered. A request being answered (an SSE stream, a synchronous Response) is never reaped for being slow to
 *   finish: streams send a comment every 15 s, which keeps proxies and this watch content while the peer reads.
 *
 * One sweep a second checks every connection (a few microseconds each), rather than a timer per socket.
 *
 * Errors Node answers before Koa sees the request (headers too large, a malformed request, a request that took
 * too long to arrive) get the spec's envelope too, where the protocol still allows a reply: Node's own answer is
 * a bare status line with an empty body.
 */
export function createHttpServer(app: Koa, limits: ConnectionLimits): http.Server {
  const metrics = app.context.metrics as Metrics | undefined;
  const server = http.createServer(
    { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs },
    app.callback(),
  );
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  const connections = new Map<Socket, Tracked>();
  // Connections with no request in flight, longest idle first (a Set keeps insertion order).
  const idle = new Set<Socket>();

  const close = (socket: Socket, reason: ConnectionCut) => {
    metrics?.connectionsClosed.inc({ reason });
    socket.destroy();
  };
  const enter = (socket: Socket, tracked: Tracked, phase: Tracked['phase']) => {
    tracked.phase = phase;
    tracked.since = Date.now();
    idle.delete(socket);
    if (phase === 'idle') {
      idle.add(socket);
      tracked.request = tracked.response = undefined;
    }
  };

  server.on('connection', (socket: Socket) => {
    const tracked: Tracked = { phase: 'idle', since: Date.now(), readAtRequest: 0, sent: 0 };
    socket.once('close', () => {
      connections.delete(socket);
      idle.delete(socket);
    });
    if (connections.size >= limits.maxConnections) {
      const victim = evictable();
      if (!victim) return void socket.destroy();
      close(victim, 'evicted');
    }
    connections.set(socket, tracked);
    idle.add(socket);
  });
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const socket = request.socket;
    const tracked = connections.get(socket);
    if (!tracked) return;
    enter(socket, tracked, 'receiving');
    tracked.request = request;
    tracked.response = response;
    tracked.readAtRequest = socket.bytesRead;
    response.once('close', () => {
      if (connections.get(socket) === tracked && tracked.response === response) enter(socket, tracked, 'idle');
    });
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => answerClientError(error, socket));

  /** The connection to close for a new one at the cap, if any may be. */
  function evictable(): Socket | undefined {
    const longestIdle = idle.values().next().value;
    if (longestIdle) return longestIdle;
    let receiving: [Socket, Tracked] | undefined;
    let stalled: [Socket, Tracked] | undefined;
    for (const entry of connections) {
      const [, tracked] = entry;
      if (receivingBody(tracked) && (!receiving || tracked.since < receiving[1].since)) receiving = entry;
      if (tracked.stalledSince !== undefined && (!stalled || tracked.stalledSince < stalled[1].stalledSince!))
        stalled = entry;
    }
    return (receiving ?? stalled)?.[0];
  }

  /** A body arriving slower than the minimum rate, past the grace: answered 408 and closed. */
  function cutSlowBody(socket: Socket, tracked: Tracked) {
    metrics?.connectionsClosed.inc({ reason: 'slow_body' });
    const response = tracked.response;
    if (response && !response.headersSent && socket.writable) {
      const slow = new ApiError(
        408,
        'request.timeout',
        `The request body arrived too slowly (under ${limits.bodyMinBytesPerSecond} bytes per second); the connection is closed.`,
      );
      const reply = errorReply(slow, tracked.request?.url ?? '');
      const body = JSON.stringify(reply.body);
      response.writeHead(reply.status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      });
      response.end(body, () => socket.destroy());
      // A peer that does not read the reply either is not waited for.
      setTimeout(() => socket.destroy(), 1000).unref();
    } else {
      socket.destroy();
    }
  }

  function sweep() {
    const now = Date.now();
    let unsent = 0;
    const stalled: Array<[Socket, number]> = [];
    for (const [socket, tracked] of connections) {
      if (tracked.phase === 'idle' && now - tracked.since >= limits.idleTimeoutMs) {
        close(socket, 'idle');
        continue;
      }
      if (tracked.phase === 'receiving') {
        if (!receivingBody(tracked)) {
          tracked.phase = 'serving';
        } else {
          const received = socket.bytesRead - tracked.readAtRequest;
          const owed = (limits.bodyMinBytesPerSecond * (now - tracked.since - limits.bodyGraceMs)) / 1000;
          if (received < owed) {
            cutSlowBody(socket, tracked);
            continue;
          }
        }
      }
      // What still waits in this process, and how far the kernel has taken it: writableLength counts a write until
      // all of it is taken, libuv's queue counts down as it goes (one 8 MiB write makes no other progress).
      const waiting = socket.writableLength;
      const queued = (socket as Socket & { _handle?: { writeQueueSize?: number } })._handle?.writeQueueSize ?? 0;
      const progress = socket.bytesWritten - waiting - queued;
      if (waiting === 0 || progress !== tracked.sent) {
        tracked.sent = progress;
        tracked.stalledSince = undefined;
        continue;
      }
      tracked.stalledSince ??= now;
      if (now - tracked.stalledSince >= limits.sendTimeoutMs) {
        close(socket, 'stalled_reply');
        continue;
      }
      unsent += waiting;
      stalled.push([socket, waiting]);
    }
    if (unsent > limits.maxUnsentBytes) {
      stalled.sort((a, b) => b[1] - a[1]);
      for (const [socket, waiting] of stalled) {
        if (unsent <= limits.maxUnsentBytes) break;
        close(socket, 'unsent_budget');
        unsent -= waiting;
      }
    }
  }
  const shortest = Math.min(limits.idleTimeoutMs, limits.bodyGraceMs, limits.sendTimeoutMs);
  const sweeper = setInterval(sweep, Math.min(1000, Math.max(50, Math.floor(shortest / 4)))).unref();
  server.once('close', () => clearInterval(sweeper));
  return server;
}

/** A request whose body is still arriving (a GET is 'receiving' only until the next sweep sees it complete). */
const receivingBody = (tracked: Tracked) => tracked.phase === 'receiving' && tracked.request?.complete === false;

const CLIENT_ERRORS: Record<string, () => ApiError> = {
  HPE_HEADER_OVERFLOW: () => new ApiError(431, 'request.headers_too_large', 'The request headers are too large.'),
  ERR_HTTP_REQUEST_TIMEOUT: () => new ApiError(408, 'request.timeout', 'The request did not arrive in time.'),
};

function answerClientError(error: NodeJS.ErrnoException, socket: Socket) {
  // A connection reset, or one with a reply already under way, has no room for ours.
  if (error.code === 'ECONNRESET' || !socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  const known =
    CLIENT_ERRORS[error.code ?? '']?.() ??
    new ApiError(400, 'request.invalid_request', 'The request is not valid HTTP.');
  // The request was not parsed, so its path (and surface) is unknown: the spec's envelope.
  const reply = errorReply(known, '');
  const body = JSON.stringify(reply.body);
  socket.end(
    `HTTP/1.1 ${reply.status} ${http.STATUS_CODES[reply.status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
