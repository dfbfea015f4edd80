import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A webhook receiver on loopback that records every request it gets, fully read. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type Reply = (request: ReceivedRequest, response: http.ServerResponse) => void;

export interface Receiver {
  readonly port: number;
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  readonly requests: ReceivedRequest[];
  close(): Promise<void>;
}

export const answer =
  (status: number, headers: Record<string, string> = {}): Reply =>
  (_request, response) => {
    response.writeHead(status, { 'content-type': 'text/plain', ...headers });
    response.end(`status ${status}`);
  };

/** Reads the request and never answers: the sender's timeout has to end the exchange. */
export const hang: Reply = () => undefined;

export async function startReceiver(reply: Reply = answer(200)): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(received);
      reply(received, response);
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
