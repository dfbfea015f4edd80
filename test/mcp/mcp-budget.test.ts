import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { budgetedFetch, McpBudgetExceeded } from '../../src/mcp/mcp-budget';
import { createGuardedFetch } from '../../src/outbound/address-guard';

/** The reply budget of MCP servers is enforced while the reply is read: the connection is closed at the budget. */
describe('budgetedFetch', () => {
  let server: http.Server;
  let url: string;
  const replies: Array<{ closedEarly: boolean; bytesWritten: number }> = [];
  let closed: () => void = () => undefined;

  beforeAll(async () => {
    // 128 MiB of event stream, written as fast as the client takes it.
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = 'x'.repeat(1024 * 1024);
      let sent = 0;
      let finished = false;
      res.on('finish', () => (finished = true));
      res.on('close', () => {
        replies.push({ closedEarly: !finished, bytesWritten: req.socket.bytesWritten });
        closed();
      });
      const pump = () => {
        while (sent < 128 && !res.destroyed) {
          sent++;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end('\n\n');
      };
      res.write('data: ');
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('cuts a 128 MiB reply at the budget and closes its connection', async () => {
    const guarded = createGuardedFetch({ allowPrivateNetworks: true });
    const told: Error[] = [];
    const fetch = budgetedFetch(guarded, 256 * 1024, (error) => told.push(error));
    const serverSawClose = new Promise<void>((resolve) => (closed = resolve));
    const response = await fetch(url);
    await expect(response.text()).rejects.toThrow("the server's reply is larger than 262144 bytes");
    await serverSawClose;
    expect(told).toHaveLength(1);
    expect(McpBudgetExceeded.name).toBe(told[0]!.name);
    // What left the server: the budget and what loopback's socket buffers took, far from the 128 MiB.
    expect(replies[0]!.closedEarly).toBe(true);
    expect(replies[0]!.bytesWritten).toBeLessThan(48 * 1024 * 1024);
    await guarded.close();
  });

  it('refuses a reply whose declared length is over the budget without reading it', async () => {
    const big = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) });
      res.write('{');
    });
    await new Promise<void>((resolve) => big.listen(0, '127.0.0.1', resolve));
    const guarded = createGuardedFetch({ allowPrivateNetworks: true });
    const fetch = budgetedFetch(guarded, 1024 * 1024, () => undefined);
    await expect(fetch(`http://127.0.0.1:${(big.address() as AddressInfo).port}/`)).rejects.toThrow(
      'larger than 1048576 bytes',
    );
    await guarded.close();
    big.closeAllConnections();
    await new Promise<void>((resolve) => big.close(() => resolve()));
  });
});
