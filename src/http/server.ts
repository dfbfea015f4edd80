import http from 'node:http';
import type { Socket } from 'node:net';
import type Koa from 'koa';
import type { Config } from '../config';

export type ConnectionLimits = Pick<Config['http'], 'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'idleTimeoutMs' | 'maxConnections'>;

/**
 * The HTTP server of the app, with bounded connections: Node closes a request that is slow to send its headers or
 * body, and a keep-alive connection after its timeout, but keeps for ever a connection that never sends a byte.
 * Here a connection with no request in flight is closed after `idleTimeoutMs`, and at `maxConnections` the
 * longest-idle one is closed to admit a new one (a new one is refused only when every connection is busy), so a
 * flood of silent sockets can neither exhaust the file descriptors nor lock out `/healthz`. A request in flight
 * (an SSE stream, a synchronous Response) is never reaped: streams send a comment every 15 s for the proxies.
 *
 * Errors Node answers before Koa sees the request (headers too large, a malformed request, a request that took
 * too long to arrive) get the spec's envelope too, where the protocol still allows a reply: Node's own answer is
 * a bare status line with an empty body.
 */
export function createHttpServer(app: Koa, limits: ConnectionLimits): http.Server {
  const server = http.createServer({ headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs }, app.callback());
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Connections with no request in flight, longest idle first (a Map keeps insertion order), with their reapers.
  const idle = new Map<Socket, NodeJS.Timeout>();
  let open = 0;
  const markIdle = (socket: Socket) => {
    if (socket.destroyed) return;
    clearTimeout(idle.get(socket));
    idle.delete(socket);
    idle.set(socket, setTimeout(() => socket.destroy(), limits.idleTimeoutMs).unref());
  };
  const markBusy = (socket: Socket) => {
    clearTimeout(idle.get(socket));
    idle.delete(socket);
  };
  server.on('connection', (socket: Socket) => {
    open++;
    socket.once('close', () => {
      open--;
      markBusy(socket);
    });
    if (open > limits.maxConnections) {
      const longestIdle = idle.keys().next().value;
      if (!longestIdle) return void socket.destroy();
      longestIdle.destroy();
    }
    markIdle(socket);
  });
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const socket = request.socket;
    markBusy(socket);
    response.once('close', () => markIdle(socket));
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => answerClientError(error, socket));
  return server;
}

const CLIENT_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'request.headers_too_large', message: 'The request headers are too large.' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'request.timeout', message: 'The request did not arrive in time.' },
};

function answerClientError(error: NodeJS.ErrnoException, socket: Socket) {
  // A connection reset, or one with a reply already under way, has no room for ours.
  if (error.code === 'ECONNRESET' || !socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  const known = CLIENT_ERRORS[error.code ?? ''] ?? { status: 400, code: 'request.invalid_request', message: 'The request is not valid HTTP.' };
  const body = JSON.stringify({ error: { code: known.code, message: known.message } });
  socket.end(
    `HTTP/1.1 ${known.status} ${http.STATUS_CODES[known.status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
