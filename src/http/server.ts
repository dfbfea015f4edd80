import http from 'node:http';
import type { Socket } from 'node:net';
import type Koa from 'koa';

/**
 * The HTTP server of the app. Errors Node answers before Koa sees the request (headers too large, a malformed
 * request line, a request that took too long to arrive) get the spec's envelope too, where the protocol still
 * allows a reply: Node's own answer is a bare status line with an empty body.
 */
export function createHttpServer(app: Koa): http.Server {
  const server = http.createServer(app.callback());
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
